# names.bash: appended by scripts/gen-completions to the bash completion
# that swift-argument-parser generates for portctl. It completes a verb's
# NAME (the first argument of lookup, send, request, wait, watch, checkin,
# listen and register, and every argument of monitor) with the names portd knows (`portctl list --json`,
# asking the instance the command line names with --system/--user/--socket),
# and leaves everything else (verbs, options, their values) to the generated
# function _portctl. When portd is not running it offers nothing.

__portctl_registered_names() {
    local -a instance=()
    local i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case "${COMP_WORDS[i]}" in
        --system | --user) instance+=("${COMP_WORDS[i]}") ;;
        --socket) instance+=(--socket "${COMP_WORDS[i + 1]}") ;;
        esac
    done
    "${COMP_WORDS[0]}" list --json --timeout 1 "${instance[@]}" 2>/dev/null |
        sed -n 's/.*"name":"\([^"\\]*\)".*/\1/p'
}

__portctl_complete_with_names() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local verb="" positional=0 i word
    # The verb is the first word that is not an option (or an option's value).
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        case "${word}" in
        --socket | --timeout | --msgid | --data | --file | --hex | --count | --exec | --max-bytes | --name)
            ((i++)) ;;
        --) break ;;
        -*) ;;
        *) if [[ -z "${verb}" ]]; then verb="${word}"; else ((positional++)); fi ;;
        esac
    done
    case "${verb}" in
    lookup | send | request | wait | watch | checkin | listen | register | monitor)
        if [[ ("${positional}" -eq 0 || "${verb}" == monitor) && "${cur}" != -* ]]; then
            case "${COMP_WORDS[COMP_CWORD - 1]}" in
            --socket | --timeout | --msgid | --data | --file | --hex | --count | --exec | --max-bytes | --name) ;;
            *)
                local IFS=$'\n'
                COMPREPLY=($(compgen -W "$(__portctl_registered_names)" -- "${cur}"))
                return
                ;;
            esac
        fi
        ;;
    esac
    _portctl "$@"
}

complete -o filenames -F __portctl_complete_with_names portctl
