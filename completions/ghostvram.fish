# fish completion for ghostvram: the commands, and each command's options read from its --help.
set -l __ghostvram_cmds scan snapshot check watch top serve xid reclaim experiment doctor demo track sim help
complete -c ghostvram -f
complete -c ghostvram -n "not __fish_seen_subcommand_from $__ghostvram_cmds" -a "$__ghostvram_cmds"
complete -c ghostvram -n "not __fish_seen_subcommand_from $__ghostvram_cmds" -l help -d 'list the commands'
complete -c ghostvram -n "not __fish_seen_subcommand_from $__ghostvram_cmds" -l version -d 'print the version'
function __ghostvram_opts
        set -l cmd (commandline -opc)[2]
        ghostvram $cmd --help 2>/dev/null | string match -r -a -- '--[a-z][a-z0-9-]*' | sort -u
end
complete -c ghostvram -n "__fish_seen_subcommand_from $__ghostvram_cmds; and string match -q -- '-*' (commandline -ct)" -a "(__ghostvram_opts)"
complete -c ghostvram -n "__fish_seen_subcommand_from help" -a "$__ghostvram_cmds"
