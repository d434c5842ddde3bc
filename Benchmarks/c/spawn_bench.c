/*
 * spawn_bench: whole-process cost of a command-line client, for comparing
 * `portctl send/request` with `busctl call` and `dbus-send --print-reply`
 * (issue 5). Each sample is posix_spawnp + waitpid of the command, its
 * stdout and stderr sent to /dev/null; a command that exits non-zero stops
 * the run, so a figure never hides failed calls.
 *
 * Usage: spawn_bench NAME ITERATIONS COMMAND [ARGS...]
 *   (ITERATIONS times BENCH_SCALE; 5 warm-up runs are not recorded).
 * Prints one latency line named proc.NAME. The spawner is party 0; the
 * command inherits its CPU.
 */
#include "bench.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

static uint64_t spawn_once(char **argv, posix_spawn_file_actions_t *fa) {
    uint64_t t0 = now_ns();
    pid_t pid;
    int r = posix_spawnp(&pid, argv[0], fa, NULL, argv, environ);
    if (r != 0) { errno = r; die(argv[0]); }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) die("waitpid");
    uint64_t t = now_ns() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s failed (status %d)\n", argv[0], status);
        exit(1);
    }
    return t;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: spawn_bench NAME ITERATIONS COMMAND [ARGS...]\n");
        return 2;
    }
    pin_party(0);
    size_t n = scaled(strtoul(argv[2], NULL, 10));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    uint64_t *samples = malloc(n * sizeof *samples);
    if (!samples) die("malloc");
    for (int i = 0; i < 5; i++) spawn_once(argv + 3, &fa);
    for (size_t i = 0; i < n; i++) samples[i] = spawn_once(argv + 3, &fa);
    char name[96];
    snprintf(name, sizeof name, "proc.%s", argv[1]);
    report_latency(name, samples, n, NULL);
    return 0;
}
