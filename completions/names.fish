# names.fish: appended by scripts/gen-completions to the fish completion that
# swift-argument-parser generates for portctl. It completes a verb's NAME
# (the first argument of lookup, send, request, wait, watch, checkin, listen
# and register, and every argument of monitor) with the names portd knows (`portctl list --json`, asking the
# instance the command line names with --system/--user/--socket), only the
# declared ports when the line has --declared (listen, register). When portd
# is not running it offers nothing.

function __portctl_registered_names
    set -l tokens (commandline -opc)
    set -l instance
    set -l only '.'
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case --declared
                set only '"declared":true'
            case --system --user
                set -a instance $tokens[$i]
            case --socket
                set -l next (math $i + 1)
                if test $next -le (count $tokens)
                    set -a instance --socket $tokens[$next]
                end
        end
    end
    $tokens[1] list --json --timeout 1 $instance 2>/dev/null | string match --regex --entire -- $only | string replace -rf '.*"name":"([^"\\\\]*)".*' '$1'
end

for verb in lookup send request wait watch checkin listen register
    complete -c portctl -n "__portctl_should_offer_completions_for_positional 'portctl $verb' -eq 1" -f -a '(__portctl_registered_names)'
end
complete -c portctl -n "__portctl_should_offer_completions_for_positional 'portctl monitor' -ge 1" -f -a '(__portctl_registered_names)'

# `portctl help WORD`: the verbs, as the generated script offers them after
# `portctl` (its own list, with their descriptions; no options).
function __portctl_verbs
    complete -C'portctl ' | string match --regex --invert -- '^-'
end
complete -c portctl -n "__portctl_should_offer_completions_for_positional 'portctl help' -eq 1" -f -a '(__portctl_verbs)'
