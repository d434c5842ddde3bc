#!/bin/sh
# shell_service.sh: a tiny service written in shell, run by
# `portctl listen --exec`. Every message to NAME runs the command below once,
# with the message's text on standard input and its msgid in
# $PORTCTL_MSGID; what the command prints is the reply:
#   msgid 1  the text in capitals
#   msgid 2  the number of bytes of the text
#   other    an error line
#
#   shell_service.sh [NAME [portctl listen options...]]
#
# Try it (in another shell):
#   portctl request upper --msgid 1 --data hello     # "HELLO"
#   portctl request upper --msgid 2 --data hello     # "5"
#
# PORTCTL names the portctl binary; without it, portctl on PATH (make
# install puts it there), else the one built in this clone (.build/debug,
# then .build/release, as ./scripts/setup-and-run and swift build leave it),
# so that it runs on a fresh clone as the README shows. The test suite sets
# PORTD_SOCKET.
set -eu

name=${1:-upper}
[ $# -gt 0 ] && shift

portctl=${PORTCTL:-}
if [ -z "$portctl" ]; then
    clone=$(cd "$(dirname "$0")/.." && pwd)
    if command -v portctl >/dev/null 2>&1; then
        portctl=portctl
    elif [ -x "$clone/.build/debug/portctl" ]; then
        portctl=$clone/.build/debug/portctl
    elif [ -x "$clone/.build/release/portctl" ]; then
        portctl=$clone/.build/release/portctl
    else
        echo "shell_service.sh: portctl not found: install it (make install), build this clone (swift build), or set PORTCTL" >&2
        exit 127
    fi
fi

exec "$portctl" listen "$name" "$@" --exec '
    case "$PORTCTL_MSGID" in
        1) tr "[:lower:]" "[:upper:]" ;;
        2) wc -c | tr -d " " ;;
        *) echo "unknown msgid $PORTCTL_MSGID (1: capitals, 2: byte count)" ;;
    esac'
