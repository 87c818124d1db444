# What `make install` / `cmake --install` puts where (PREFIX and DESTDIR as usual). The binary
# and the simulated driver (lib/ghostvram/sim: what `ghostvram demo` and `sim` need, found
# relative to the binary) are installed by their targets; this adds the rest.
include(GNUInstallDirs)

install(FILES docs/ghostvram.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# shell completions, where each shell looks for packaged ones
install(FILES completions/ghostvram.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME ghostvram)
# (zsh: Debian's vendor-completions by default; RHEL's zsh looks only in site-functions, which
# packaging/rpm/ghostvram.spec passes)
set(GV_ZSH_COMPLETION_DIR ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions CACHE STRING
    "where the zsh completion goes, relative to the prefix")
install(FILES completions/_ghostvram DESTINATION ${GV_ZSH_COMPLETION_DIR})
install(FILES completions/ghostvram.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)

# systemd units with ExecStart pointing at the binary of the prefix installed to (the tree's
# units say /usr/bin): rewritten at install time, so `cmake --install --prefix P` is right too
set(GV_UNIT_DIR lib/systemd/system CACHE STRING "where the systemd units go, relative to the prefix")
foreach(unit ghostvram-serve.service ghostvram-textfile.service ghostvram-textfile.timer)
  install(CODE "
    file(READ \"${CMAKE_SOURCE_DIR}/deploy/systemd/${unit}\" text)
    string(REPLACE \"/usr/bin/ghostvram\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/ghostvram\" text \"\${text}\")
    set(dst \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${GV_UNIT_DIR}/${unit}\")
    message(STATUS \"Installing: \${dst}\")
    file(WRITE \"\${dst}\" \"\${text}\")
  ")
endforeach()

# the other deploy files (Prometheus rules, Grafana, Kubernetes, the Slurm prolog/epilog/health
# check and the NHC check of docs/fleet.md) and the daily doctor cron line, as examples for the
# administrator; the Slurm scripts keep their mode (a site may symlink them from /etc/slurm)
install(DIRECTORY deploy/prometheus deploy/grafana deploy/kubernetes deploy/slurm deploy/nhc
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ghostvram/deploy USE_SOURCE_PERMISSIONS)
install(CODE "
  set(dst \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/ghostvram/deploy/cron/ghostvram-doctor\")
  message(STATUS \"Installing: \${dst}\")
  file(WRITE \"\${dst}\" \"# /etc/cron.d/ghostvram-doctor: a daily setup check, mailed only when something needs doing
# (docs/doctor.md). Copy it to /etc/cron.d to enable it.
17 6 * * * root \${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/ghostvram doctor >/var/lib/ghostvram/doctor.txt 2>&1 || cat /var/lib/ghostvram/doctor.txt
\")
")
install(FILES README.md README.zh-CN.md docs/doctor.md docs/verdicts.md docs/xid.md docs/metrics.md docs/reclaim.md
              docs/real-gpu.md docs/faq.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# the Chinese pages (docs/zh-CN/*.md) in a directory of their own, as in the tree
install(DIRECTORY docs/zh-CN/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/zh-CN FILES_MATCHING PATTERN "*.md")
