# bash completion for ghostvram. Commands are listed here (tests/integration/t_package.sh checks
# the list against `ghostvram --help`); each command's options are read from its own --help, so
# they never drift from the binary.
_ghostvram() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
        local cmds="scan snapshot check watch top serve xid reclaim experiment doctor demo track sim help"
        if [ "$COMP_CWORD" -eq 1 ]; then
                mapfile -t COMPREPLY < <(compgen -W "$cmds --help --version" -- "$cur")
                return
        fi
        local cmd=${COMP_WORDS[1]}
        if [ "$cmd" = help ]; then
                [ "$COMP_CWORD" -eq 2 ] && mapfile -t COMPREPLY < <(compgen -W "$cmds" -- "$cur")
                return
        fi
        case $prev in
        --proc | --from-bundle | --save-bundle | --root | --textfile)
                mapfile -t COMPREPLY < <(compgen -d -- "$cur")
                return ;;
        --nvml-lib | --kmsg | --exec)
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                return ;;
        esac
        if [[ $cur == -* ]]; then
                local opts
                opts=$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
                mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
        fi
}
complete -F _ghostvram ghostvram
