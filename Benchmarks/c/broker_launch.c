/*
 * broker_launch: runs dbus-broker on a private bus socket with a permissive
 * session policy, without dbus-broker-launch or systemd, so dbus_pingpong
 * can measure dbus-broker beside dbus-daemon.
 *
 * dbus-broker itself only mediates messages; whoever starts it is its
 * "controller": it hands the broker a connected socket (--controller FD),
 * speaks D-Bus over it, and adds a listening socket with a policy through
 * org.bus1.DBus.Broker.AddListener. This is what dbus-broker's own test
 * suite does. The broker exits when the controller connection closes, so
 * the controller stays, in the background, until SIGTERM or the broker's
 * exit; it then stops the broker and reaps it.
 *
 * Usage: broker_launch SOCKET_PATH [BROKER_BINARY]
 *   (BROKER_BINARY defaults to /usr/bin/dbus-broker; any unpacked copy
 *   works, nothing needs installing). Prints the controller's pid once the
 *   socket accepts clients, and returns; kill that pid to stop the bus.
 * The policy format is the one of dbus-broker 29 and later
 * (xmit rules "btssssuutt").
 */
#include "bench.h"

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#define POLICY_T_BATCH "bt" "a(btbs)" "a(btssssuutt)" "a(btssssuutt)"
#define POLICY_T "a(u(" POLICY_T_BATCH "))" "a(buu(" POLICY_T_BATCH "))" "a(ss)" "bs"

static void check(int r, const char *what) {
    if (r < 0) {
        fprintf(stderr, "broker_launch: %s: %s\n", what, strerror(-r));
        exit(1);
    }
}

/* Everyone may connect, own any name, send and receive anything. */
static void append_policy(sd_bus_message *m) {
    check(sd_bus_message_open_container(m, 'v', "(" POLICY_T ")"), "policy");
    check(sd_bus_message_open_container(m, 'r', POLICY_T), "policy");
    check(sd_bus_message_open_container(m, 'a', "(u(" POLICY_T_BATCH "))"), "policy");
    check(sd_bus_message_open_container(m, 'r', "u(" POLICY_T_BATCH ")"), "policy");
    check(sd_bus_message_append(m, "u", (uint32_t)-1), "policy"); /* fall-back uid */
    check(sd_bus_message_open_container(m, 'r', POLICY_T_BATCH), "policy");
    check(sd_bus_message_append(m, POLICY_T_BATCH,
                                true, UINT64_C(1),                       /* connect */
                                1, true, UINT64_C(1), true, "",          /* own any name */
                                1, true, UINT64_C(1), "", "", "", "", 0, 0, UINT64_C(0), UINT64_MAX,  /* send */
                                1, true, UINT64_C(1), "", "", "", "", 0, 0, UINT64_C(0), UINT64_MAX), /* receive */
          "policy");
    check(sd_bus_message_close_container(m), "policy");
    check(sd_bus_message_close_container(m), "policy");
    check(sd_bus_message_close_container(m), "policy");
    check(sd_bus_message_open_container(m, 'a', "(buu(" POLICY_T_BATCH "))"), "policy");
    check(sd_bus_message_close_container(m), "policy");
    check(sd_bus_message_open_container(m, 'a', "(ss)"), "policy"); /* no SELinux rules */
    check(sd_bus_message_close_container(m), "policy");
    check(sd_bus_message_append(m, "bs", false, "session"), "policy"); /* no AppArmor; a session bus */
    check(sd_bus_message_close_container(m), "policy");
    check(sd_bus_message_close_container(m), "policy");
}

static int listening_socket(const char *path) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) { errno = ENAMETOOLONG; die(path); }
    strcpy(sa.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) die("socket");
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die(path);
    if (listen(fd, 256) < 0) die("listen");
    return fd;
}

static volatile sig_atomic_t stopping;
static void on_term(int sig) { (void)sig; stopping = 1; }

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: broker_launch SOCKET_PATH [BROKER_BINARY]\n");
        return 2;
    }
    const char *binary = argc == 3 ? argv[2] : "/usr/bin/dbus-broker";
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0) die("pipe2");
    pid_t controller = fork();
    if (controller < 0) die("fork");
    if (controller > 0) {
        /* Foreground: wait until the bus accepts clients, print the pid. */
        close(ready[1]);
        char ok;
        if (read(ready[0], &ok, 1) != 1) {
            waitpid(controller, NULL, 0);
            fprintf(stderr, "broker_launch: dbus-broker did not start\n");
            return 1;
        }
        printf("%d\n", (int)controller);
        return 0;
    }

    /* Background: the controller. */
    close(ready[0]);
    setsid();
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0) die("/dev/null");
    close(devnull);

    int listener = listening_socket(argv[1]);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0) die("socketpair");
    pid_t broker = fork();
    if (broker < 0) die("fork");
    if (broker == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int fl = fcntl(pair[1], F_GETFD);
        if (fl < 0 || fcntl(pair[1], F_SETFD, fl & ~FD_CLOEXEC) < 0) die("fcntl");
        char fd[16];
        snprintf(fd, sizeof fd, "%d", pair[1]);
        execl(binary, binary, "--controller", fd, "--machine-id", "0123456789abcdef0123456789abcdef",
              "--max-matches", "1000000", "--max-objects", "1000000", "--max-bytes", "1000000000",
              (char *)NULL);
        die(binary);
    }
    close(pair[1]);

    sd_bus *bus = NULL;
    check(sd_bus_new(&bus), "sd_bus_new");
    check(sd_bus_set_fd(bus, pair[0], pair[0]), "sd_bus_set_fd");
    check(sd_bus_start(bus), "sd_bus_start");
    sd_bus_message *m = NULL;
    check(sd_bus_message_new_method_call(bus, &m, NULL, "/org/bus1/DBus/Broker", "org.bus1.DBus.Broker",
                                         "AddListener"), "AddListener");
    check(sd_bus_message_append(m, "oh", "/org/bus1/DBus/Listener/0", listener), "AddListener");
    append_policy(m);
    sd_bus_error error = SD_BUS_ERROR_NULL;
    if (sd_bus_call(bus, m, 0, &error, NULL) < 0) {
        fprintf(stderr, "broker_launch: AddListener: %s\n", error.message ? error.message : "failed");
        kill(broker, SIGTERM);
        waitpid(broker, NULL, 0);
        return 1;
    }
    sd_bus_message_unref(m);
    close(listener);

    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (write(ready[1], "r", 1) != 1) die("write");
    close(ready[1]);

    /* Serve the controller connection (the broker sends nothing we need)
     * until told to stop or the broker goes. */
    while (!stopping) {
        int r = sd_bus_process(bus, NULL);
        if (r < 0) break;
        if (r > 0) continue;
        r = sd_bus_wait(bus, UINT64_MAX);
        if (r < 0 && r != -EINTR) break;
    }
    sd_bus_close(bus);
    sd_bus_unref(bus);
    kill(broker, SIGTERM);
    waitpid(broker, NULL, 0);
    unlink(argv[1]);
    return 0;
}
