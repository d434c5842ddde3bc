/*
 * dbus_pingpong: round-trip latency of a D-Bus method call and its reply
 * through a bus daemon (dbus-daemon or dbus-broker, at the address given),
 * using sd-bus from libsystemd: what portd is measured against.
 *
 * A forked server process (party 1) owns org.portd.Bench and answers
 * org.portd.Bench.Echo(ay) -> ay on /org/portd/Bench with the bytes it got;
 * the client (party 0) calls it, one call at a time, for 16 B and 1 KiB,
 * timing each sd_bus_call with CLOCK_MONOTONIC after a warm-up.
 *
 * Usage:
 *   dbus_pingpong ADDRESS LABEL [ITERATIONS]   measure (default 5000 calls
 *                                              per size, times BENCH_SCALE);
 *                                              LABEL names the daemon in the
 *                                              result lines (dbus-daemon, ...)
 *   dbus_pingpong --serve ADDRESS              start a server in the
 *                                              background, print its pid once
 *                                              it owns the name, and exit
 *                                              (for busctl / dbus-send runs)
 * The server exits when its bus connection closes or on SIGTERM.
 */
#include "bench.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>

#define NAME "org.portd.Bench"
#define PATH "/org/portd/Bench"
#define IFACE "org.portd.Bench"
#define WARMUP 200

static void check(int r, const char *what) {
    if (r < 0) {
        fprintf(stderr, "%s: %s\n", what, strerror(-r));
        exit(1);
    }
}

static sd_bus *connect_to(const char *address) {
    sd_bus *bus = NULL;
    check(sd_bus_new(&bus), "sd_bus_new");
    check(sd_bus_set_address(bus, address), "sd_bus_set_address");
    check(sd_bus_set_bus_client(bus, 1), "sd_bus_set_bus_client");
    check(sd_bus_start(bus), "sd_bus_start");
    return bus;
}

static int on_echo(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)userdata; (void)error;
    const void *bytes;
    size_t size;
    int r = sd_bus_message_read_array(m, 'y', &bytes, &size);
    if (r < 0) return r;
    sd_bus_message *reply = NULL;
    r = sd_bus_message_new_method_return(m, &reply);
    if (r < 0) return r;
    r = sd_bus_message_append_array(reply, 'y', bytes, size);
    if (r >= 0) r = sd_bus_send(NULL, reply, NULL);
    sd_bus_message_unref(reply);
    return r < 0 ? r : 1;
}

static const sd_bus_vtable vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("Echo", "ay", "ay", on_echo, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END,
};

/* Owns the name, writes one byte to `ready`, then serves until the bus goes. */
static void serve(const char *address, int ready) {
    pin_party(1);
    /* Let go of the caller's stdout: a shell reading `--serve`'s pid with
     * $(...) waits for every writer to close it. */
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0) die("/dev/null");
    close(devnull);
    sd_bus *bus = connect_to(address);
    check(sd_bus_add_object_vtable(bus, NULL, PATH, IFACE, vtable, NULL), "sd_bus_add_object_vtable");
    check(sd_bus_request_name(bus, NAME, 0), "sd_bus_request_name");
    write_full(ready, "r", 1);
    close(ready);
    for (;;) {
        int r = sd_bus_process(bus, NULL);
        if (r == -ECONNRESET || r == -ENOTCONN) break;
        check(r, "sd_bus_process");
        if (r > 0) continue;
        r = sd_bus_wait(bus, UINT64_MAX);
        if (r == -ECONNRESET || r == -ENOTCONN) break;
        check(r, "sd_bus_wait");
    }
    sd_bus_flush_close_unref(bus);
}

/* Forks the server; returns once it owns the name. */
static pid_t start_server(const char *address) {
    int p[2];
    if (pipe(p) < 0) die("pipe");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        close(p[0]);
        serve(address, p[1]);
        _exit(0);
    }
    close(p[1]);
    char b;
    read_full(p[0], &b, 1);
    close(p[0]);
    return pid;
}

static void call_echo(sd_bus *bus, const char *payload, size_t size) {
    sd_bus_message *m = NULL, *reply = NULL;
    sd_bus_error error = SD_BUS_ERROR_NULL;
    check(sd_bus_message_new_method_call(bus, &m, NAME, PATH, IFACE, "Echo"), "new_method_call");
    check(sd_bus_message_append_array(m, 'y', payload, size), "append_array");
    int r = sd_bus_call(bus, m, 0, &error, &reply);
    if (r < 0) {
        fprintf(stderr, "Echo: %s\n", error.message ? error.message : strerror(-r));
        exit(1);
    }
    const void *bytes;
    size_t got;
    check(sd_bus_message_read_array(reply, 'y', &bytes, &got), "read_array");
    if (got != size) { fprintf(stderr, "Echo: %zu bytes back, sent %zu\n", got, size); exit(1); }
    sd_bus_message_unref(reply);
    sd_bus_message_unref(m);
}

static void measure(sd_bus *bus, const char *label, size_t size, size_t iterations) {
    char payload[1024];
    memset(payload, 0x5a, sizeof payload);
    uint64_t *samples = malloc(iterations * sizeof *samples);
    if (!samples) die("malloc");
    for (size_t i = 0; i < WARMUP; i++) call_echo(bus, payload, size);
    for (size_t i = 0; i < iterations; i++) {
        uint64_t t0 = now_ns();
        call_echo(bus, payload, size);
        samples[i] = now_ns() - t0;
    }
    char name[96];
    snprintf(name, sizeof name, "dbus.rtt.%s.%s", size == 16 ? "16B" : "1KiB", label);
    report_latency(name, samples, iterations, NULL);
    free(samples);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--serve") == 0) {
        pid_t pid = start_server(argv[2]);
        printf("%d\n", (int)pid);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: dbus_pingpong ADDRESS LABEL [ITERATIONS] | --serve ADDRESS\n");
        return 2;
    }
    pin_party(0);
    size_t iterations = scaled(argc > 3 ? strtoul(argv[3], NULL, 10) : 5000);
    pid_t server = start_server(argv[1]);
    sd_bus *bus = connect_to(argv[1]);
    measure(bus, argv[2], 16, iterations);
    measure(bus, argv[2], 1024, iterations);
    sd_bus_flush_close_unref(bus);
    kill(server, SIGTERM);
    int status;
    waitpid(server, &status, 0);
    return 0;
}
