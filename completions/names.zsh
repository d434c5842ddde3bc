# names.zsh: put by scripts/gen-completions into the zsh completion that
# swift-argument-parser generates for portctl, whose NAME arguments
# (':name:', ':server:') it points at this function. It completes them with
# the names portd knows (`portctl list --json`, asking the instance the
# command line names with --system/--user/--socket), only the declared
# ports when the line has --declared (listen, register). When portd is not
# running it offers nothing.

_portctl_registered_names() {
    local -a instance names
    local -i i
    local only=""
    for ((i = 2; i < CURRENT; i++)); do
        case "${words[i]}" in
        --declared) only='/"declared":true/' ;;
        --system | --user) instance+=("${words[i]}") ;;
        --socket) instance+=(--socket "${words[i + 1]}") ;;
        esac
    done
    names=(${(f)"$("${words[1]}" list --json --timeout 1 "${instance[@]}" 2>/dev/null |
        sed -n "${only}"'s/.*"name":"\([^"\\]*\)".*/\1/p')"})
    compadd -a names
}
