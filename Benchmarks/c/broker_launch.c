/*
 * broker_launch: starts dbus-broker-launch on a private bus socket without
 * systemd, for dbus_pingpong to measure dbus-broker beside dbus-daemon.
 *
 * dbus-broker-launch expects what a systemd service gets: its listening
 * socket by socket activation (LISTEN_FDS/LISTEN_PID, the socket as fd 3),
 * a journal socket at /run/systemd/journal/socket (it refuses to start
 * without one), and a "user bus" to connect to (it connects back to its own
 * bus). This program provides all three and then execs the launcher, so the
 * launcher keeps this pid and LISTEN_PID stays right.
 *
 * Run it where /run/systemd/journal is private (scripts/bench uses
 * `unshare -m` and a tmpfs), never over a real journal:
 *   broker_launch SOCKET_PATH CONFIG_FILE
 * The journal socket is drained by a child that dies with the launcher.
 */
#include "bench.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#define JOURNAL "/run/systemd/journal/socket"

static int bound(int type, const char *path) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) { errno = ENAMETOOLONG; die(path); }
    strcpy(sa.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, type, 0);
    if (fd < 0) die("socket");
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die(path);
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: broker_launch SOCKET_PATH CONFIG_FILE\n");
        return 2;
    }
    mkdir("/run/systemd/journal", 0755);
    int journal = bound(SOCK_DGRAM, JOURNAL);
    pid_t launcher = getpid();
    pid_t sink = fork();
    if (sink < 0) die("fork");
    if (sink == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != launcher) _exit(0);
        char buf[65536];
        for (;;)
            if (recv(journal, buf, sizeof buf, 0) < 0 && errno != EINTR) _exit(0);
    }
    close(journal);

    int listener = bound(SOCK_STREAM, argv[1]);
    if (listen(listener, 128) < 0) die("listen");
    if (listener != 3) {
        if (dup2(listener, 3) < 0) die("dup2");
        close(listener);
    }
    char pid[32], address[160];
    snprintf(pid, sizeof pid, "%d", (int)launcher);
    snprintf(address, sizeof address, "unix:path=%s", argv[1]);
    setenv("LISTEN_FDS", "1", 1);
    setenv("LISTEN_PID", pid, 1);
    setenv("DBUS_SESSION_BUS_ADDRESS", address, 1);
    execlp("dbus-broker-launch", "dbus-broker-launch", "--scope", "user", "--config-file", argv[2], (char *)NULL);
    die("exec dbus-broker-launch");
}
