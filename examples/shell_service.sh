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
# PORTCTL names the portctl binary (default: portctl on PATH); the test
# suite sets it and PORTD_SOCKET.
set -eu

name=${1:-upper}
[ $# -gt 0 ] && shift

exec "${PORTCTL:-portctl}" listen "$name" "$@" --exec '
    case "$PORTCTL_MSGID" in
        1) tr "[:lower:]" "[:upper:]" ;;
        2) wc -c | tr -d " " ;;
        *) echo "unknown msgid $PORTCTL_MSGID (1: capitals, 2: byte count)" ;;
    esac'
