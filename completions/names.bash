# names.bash: appended by scripts/gen-completions to the bash completion
# that swift-argument-parser generates for portctl. It completes a verb's
# NAME (the first argument of lookup, send, request, wait, watch, checkin,
# listen and register, and every argument of monitor) with the names portd knows (`portctl list --json`,
# asking the instance the command line names with --system/--user/--socket),
# only the declared ports when the line has --declared (listen, register);
# `portctl help WORD` with the verbs (the generated function's own
# completion of a verb); and leaves everything else (verbs, options, their
# values: files for --socket and --file) to the generated function
# _portctl. When portd is not running it offers no name.

__portctl_registered_names() {  # [--declared]: only the declared ports
    local -a instance=()
    local i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case "${COMP_WORDS[i]}" in
        --system | --user) instance+=("${COMP_WORDS[i]}") ;;
        --socket) instance+=(--socket "${COMP_WORDS[i + 1]}") ;;
        esac
    done
    local only=""
    [[ "${1:-}" == --declared ]] && only='/"declared":true/'
    "${COMP_WORDS[0]}" list --json --timeout 1 "${instance[@]}" 2>/dev/null |
        sed -n "${only}"'s/.*"name":"\([^"\\]*\)".*/\1/p'
}

__portctl_complete_with_names() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local verb="" positional=0 declared="" i word
    # The verb is the first word that is not an option (or an option's value).
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        case "${word}" in
        --socket | --timeout | --msgid | --data | --file | --hex | --count | --exec | --max-bytes | --name)
            ((i++)) ;;
        --) break ;;
        --declared) declared=--declared ;;
        -*) ;;
        *) if [[ -z "${verb}" ]]; then verb="${word}"; else ((positional++)); fi ;;
        esac
    done
    case "${verb}" in
    help)
        # A verb, as the generated function completes `portctl WORD`.
        if [[ "${positional}" -eq 0 && "${cur}" != -* ]]; then
            local -a COMP_WORDS=("${COMP_WORDS[0]}" "${cur}")
            local COMP_CWORD=1 COMP_LINE="${COMP_WORDS[0]} ${cur}"
            local COMP_POINT=${#COMP_LINE}
            _portctl "${COMP_WORDS[0]}" "${cur}" "${COMP_WORDS[0]}"
            local -a verbs=()
            for word in "${COMPREPLY[@]}"; do [[ "${word}" == -* ]] || verbs+=("${word}"); done
            COMPREPLY=("${verbs[@]}")
            return
        fi
        ;;
    lookup | send | request | wait | watch | checkin | listen | register | monitor)
        if [[ ("${positional}" -eq 0 || "${verb}" == monitor) && "${cur}" != -* ]]; then
            case "${COMP_WORDS[COMP_CWORD - 1]}" in
            --socket | --timeout | --msgid | --data | --file | --hex | --count | --exec | --max-bytes | --name) ;;
            *)
                local IFS=$'\n'
                COMPREPLY=($(compgen -W "$(__portctl_registered_names ${declared})" -- "${cur}"))
                return
                ;;
            esac
        fi
        ;;
    esac
    _portctl "$@"
}

complete -o filenames -F __portctl_complete_with_names portctl
