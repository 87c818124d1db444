# Message catalogues (GNU gettext, docs/i18n.md): po/LANG.po → locale/LANG/LC_MESSAGES/ghostvram.mo
# in the build tree (found there by a ghostvram run from it) and under the locale dir installed.
# msgfmt --check fails the build on a translation whose format directives differ from its
# msgid's (a %s for a %d would crash at run time).
find_program(GV_MSGFMT msgfmt REQUIRED)
find_program(GV_XGETTEXT xgettext REQUIRED)
file(STRINGS ${CMAKE_SOURCE_DIR}/po/LINGUAS GV_LINGUAS REGEX "^[^#]")
set(GV_CATALOGUES)
foreach(lang ${GV_LINGUAS})
  set(dir ${CMAKE_BINARY_DIR}/locale/${lang}/LC_MESSAGES)
  add_custom_command(OUTPUT ${dir}/ghostvram.mo
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${GV_MSGFMT} --check -o ${dir}/ghostvram.mo ${CMAKE_SOURCE_DIR}/po/${lang}.po
    DEPENDS ${CMAKE_SOURCE_DIR}/po/${lang}.po
    COMMENT "message catalogue ${lang}")
  list(APPEND GV_CATALOGUES ${dir}/ghostvram.mo)
  install(FILES ${dir}/ghostvram.mo DESTINATION ${CMAKE_INSTALL_LOCALEDIR}/${lang}/LC_MESSAGES)
endforeach()
add_custom_target(gv_catalogues ALL DEPENDS ${GV_CATALOGUES})

# `cmake --build build --target pot`: the template of every marked sentence, build/ghostvram.pot
# (scripts/i18n-pot; `make po-update` merges it into each po/LANG.po)
add_custom_target(pot
  COMMAND ${CMAKE_SOURCE_DIR}/scripts/i18n-pot ${CMAKE_BINARY_DIR}/ghostvram.pot
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "build/ghostvram.pot from the marked sentences of src/")
