/*
 * nats_bare: the baseline of the bridge's figures (issue 25): a bare libnats
 * requester and responder over the same NATS path the bridges use, doing
 * the same request/reply and one-way stream, with nothing of portd's.
 *
 *   nats_bare TOPOLOGY URL_REQUESTER URL_RESPONDER
 *
 * TOPOLOGY names the lines (`one`: both on one nats-server; `leaf`: the
 * requester on one leaf, the responder on another, through their hub).
 * The responder is a forked process (party 1) connected to URL_RESPONDER;
 * the requester (party 0) to URL_REQUESTER. Printed:
 *   nats.bare.rtt.{16B,1KiB}.TOPOLOGY     natsConnection_Request round trips
 *                                         to a responder that publishes the
 *                                         payload back to the reply subject
 *                                         (from libnats' delivery thread);
 *   nats.bare.oneway.64B.TOPOLOGY         natsConnection_Publish of 64 B
 *                                         records as fast as libnats takes
 *                                         them, then one request on a sync
 *                                         subject answered with how many
 *                                         arrived: until then. Median of 5
 *                                         runs; a run that lost records
 *                                         (a slow consumer) says lost=.
 * Both ends publish with natsOptions_SetSendAsap, as portd-bridge does
 * (NATS_BARE_BUFFERED=1 in the environment: libnats' default buffering).
 * Counts scale with BENCH_SCALE, as the other programs'.
 */
#include "bench.h"

#include <nats/nats.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define ECHO "bench.bare.echo"
#define SINK "bench.bare.sink"
#define SYNC "bench.bare.sync"
#define READY "bench.bare.ready"

static atomic_long sunk;

static void check(natsStatus s, const char *what) {
    if (s != NATS_OK) {
        fprintf(stderr, "nats_bare: %s: %s\n", what, natsStatus_GetText(s));
        exit(1);
    }
}

static natsConnection *connect_to(const char *url) {
    natsOptions *opts;
    natsConnection *nc;
    check(natsOptions_Create(&opts), "options");
    check(natsOptions_SetURL(opts, url), "url");
    /* As portd-bridge does: every publish is written at once. Without it,
       libnats leaves small publishes to its flusher thread, and a request's
       round trip here was about 1 ms, whatever the path. */
    if (getenv("NATS_BARE_BUFFERED") == NULL) check(natsOptions_SetSendAsap(opts, true), "send asap");
    check(natsConnection_Connect(&nc, opts), url);
    natsOptions_Destroy(opts);
    return nc;
}

static void on_echo(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure) {
    (void)sub; (void)closure;
    natsConnection_Publish(nc, natsMsg_GetReply(msg), natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
    natsMsg_Destroy(msg);
}

static void on_sink(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure) {
    (void)nc; (void)sub; (void)closure;
    atomic_fetch_add(&sunk, 1);
    natsMsg_Destroy(msg);
}

static void on_sync(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure) {
    (void)sub; (void)closure;
    char count[32];
    int n = snprintf(count, sizeof count, "%ld", atomic_exchange(&sunk, 0));
    natsConnection_Publish(nc, natsMsg_GetReply(msg), count, n);
    natsMsg_Destroy(msg);
}

static void on_ready(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure) {
    (void)sub; (void)closure;
    natsConnection_Publish(nc, natsMsg_GetReply(msg), "ok", 2);
    natsMsg_Destroy(msg);
}

/* The responder: subscribes, then serves until killed. Its subscriptions
   are known everywhere once a request on READY is answered (the requester
   asks until one is). */
static void responder(const char *url) {
    /* Gone with the requester, however that ends. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) die("prctl");
    if (getppid() == 1) exit(1);
    pin_party(1);
    natsConnection *nc = connect_to(url);
    natsSubscription *echo, *sink, *sync, *ready;
    check(natsConnection_Subscribe(&echo, nc, ECHO, on_echo, NULL), "subscribe echo");
    check(natsConnection_Subscribe(&sink, nc, SINK, on_sink, NULL), "subscribe sink");
    check(natsSubscription_SetPendingLimits(sink, -1, -1), "sink limits");
    check(natsConnection_Subscribe(&sync, nc, SYNC, on_sync, NULL), "subscribe sync");
    check(natsConnection_Subscribe(&ready, nc, READY, on_ready, NULL), "subscribe ready");
    check(natsConnection_Flush(nc), "flush");
    for (;;) pause();
}

static void round_trips(natsConnection *nc, const char *topology, int bytes, int iterations) {
    char *payload = malloc(bytes);
    memset(payload, 0x5a, bytes);
    uint64_t *ns = malloc(sizeof *ns * iterations);
    const int warmup = 500;
    for (int i = 0; i < warmup + iterations; i++) {
        natsMsg *reply = NULL;
        uint64_t t0 = now_ns();
        check(natsConnection_Request(&reply, nc, ECHO, payload, bytes, 10000), "request");
        uint64_t t1 = now_ns();
        if (natsMsg_GetDataLength(reply) != bytes) {
            fprintf(stderr, "nats_bare: reply of %d bytes\n", natsMsg_GetDataLength(reply));
            exit(1);
        }
        natsMsg_Destroy(reply);
        if (i >= warmup) ns[i - warmup] = t1 - t0;
    }
    char name[64];
    snprintf(name, sizeof name, "nats.bare.rtt.%s.%s", bytes == 1024 ? "1KiB" : "16B", topology);
    report_latency(name, ns, iterations, NULL);
    free(ns);
    free(payload);
}

static void one_way(natsConnection *nc, const char *topology, int count) {
    char payload[64];
    memset(payload, 0x33, sizeof payload);
    double rates[5];
    long lost = 0;
    for (int run = 0; run < 5; run++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < count; i++) check(natsConnection_Publish(nc, SINK, payload, sizeof payload), "publish");
        natsMsg *reply = NULL;
        check(natsConnection_Request(&reply, nc, SYNC, "", 0, 30000), "sync");
        uint64_t elapsed = now_ns() - t0;
        long arrived = strtol(natsMsg_GetData(reply), NULL, 10);
        natsMsg_Destroy(reply);
        lost += count - arrived;
        rates[run] = count * 1e9 / elapsed;
    }
    /* median of 5 */
    for (int i = 1; i < 5; i++)
        for (int j = i; j > 0 && rates[j] < rates[j - 1]; j--) {
            double t = rates[j]; rates[j] = rates[j - 1]; rates[j - 1] = t;
        }
    printf("name=nats.bare.oneway.64B.%s cpus=%s unit=msg/s value=%.0f mb_per_s=%.2f runs=5 count=%d lost=%ld\n",
           topology, placement(), rates[2], rates[2] * 64 / 1e6, count, lost);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: nats_bare TOPOLOGY URL_REQUESTER URL_RESPONDER\n");
        return 2;
    }
    const char *topology = argv[1];
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) responder(argv[3]);
    pin_party(0);
    natsConnection *nc = connect_to(argv[2]);
    /* Until the responder's subscriptions have reached this server. */
    natsMsg *reply = NULL;
    int tries = 0;
    while (natsConnection_Request(&reply, nc, READY, "", 0, 200) != NATS_OK) {
        if (++tries == 150) {
            fprintf(stderr, "nats_bare: the responder never answered\n");
            kill(child, SIGKILL);
            return 1;
        }
        nats_Sleep(20);
    }
    natsMsg_Destroy(reply);
    round_trips(nc, topology, 16, (int)scaled(5000));
    round_trips(nc, topology, 1024, (int)scaled(5000));
    one_way(nc, topology, (int)scaled(50000));
    natsConnection_Destroy(nc);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return 0;
}
