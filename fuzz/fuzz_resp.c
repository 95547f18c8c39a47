/* SPDX-License-Identifier: MIT */
/*
 * fuzz_resp.c - libFuzzer harness for the RESP request parser
 * (examples/resp.c).
 *
 * The input is what one client sends on a connection.  It is parsed as kv
 * parses it, request after request, and each answer is checked: the bytes
 * taken lie within the input, the arguments lie within those bytes, their
 * count and a bulk's length keep to the limits, an error has a message.
 * Then the same input is parsed again as if it arrived in reads of 1 to 64
 * bytes (sizes drawn from the input), re-parsing after each read as kv
 * does: the requests seen, their arguments and the final error or
 * incompleteness must be the same, whatever the split (resp.h's
 * invariant).
 */
#include "fuzz.h"
#include "resp.h"

#include <string.h>

static struct resp_arg args[RESP_MAX_ARGS];

/* What parsing one stream saw. */
struct outcome {
    size_t requests;       /* complete requests */
    size_t consumed;       /* bytes they took */
    long last;             /* the last answer: 0 (incomplete) or -1 */
    const char *err;       /* its message, for -1 */
    uint64_t digest;       /* of every request's length and arguments */
};

/* Check one accepted request at base (used bytes, argc arguments) and add
 * it to o, as offsets from the start of the stream at d. */
static void take(struct outcome *o, const char *d, const char *base,
                 long used, int argc)
{
    FUZZ_CHECK(argc >= 0 && argc <= RESP_MAX_ARGS);
    uint64_t h = fuzz_mix(o->digest, &used, sizeof used);
    h = fuzz_mix(h, &argc, sizeof argc);
    for (int i = 0; i < argc; i++) {
        FUZZ_CHECK(args[i].p >= base);
        FUZZ_CHECK(args[i].p + args[i].n <= base + used);
        FUZZ_CHECK(args[i].n <= RESP_MAX_BULK);
        size_t at = (size_t)(args[i].p - d);
        h = fuzz_mix(h, &at, sizeof at);
        h = fuzz_mix(h, &args[i].n, sizeof args[i].n);
    }
    o->digest = h;
    o->requests++;
    o->consumed += (size_t)used;
}

/* Parse the requests at the start of d[o->consumed..avail) into o; true
 * when it stopped for want of bytes, false on a protocol error. */
static bool parse_some(struct outcome *o, const char *d, size_t avail)
{
    for (;;) {
        const char *base = d + o->consumed;
        size_t n = avail - o->consumed;
        int argc = -1;
        const char *err = NULL;
        long used = resp_parse(base, n, args, &argc, &err);
        FUZZ_CHECK(used >= -1 && used <= (long)n);
        if (used > 0) {
            take(o, d, base, used, argc);
            continue;
        }
        o->last = used;
        o->err = err;
        if (used < 0)
            FUZZ_CHECK(err != NULL);
        return used == 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *d = (const char *)data;
    struct outcome whole = {.digest = FUZZ_DIGEST_INIT};
    parse_some(&whole, d, size);

    struct outcome split = {.digest = FUZZ_DIGEST_INIT};
    uint64_t rng = fuzz_mix(FUZZ_DIGEST_INIT, data, size < 16 ? size : 16);
    size_t avail = 0;
    bool more = true;
    while (more && avail < size) {
        size_t piece = fuzz_piece(&rng);
        avail = size - avail < piece ? size : avail + piece;
        more = parse_some(&split, d, avail);
    }
    FUZZ_CHECK(split.requests == whole.requests);
    FUZZ_CHECK(split.consumed == whole.consumed);
    FUZZ_CHECK(split.digest == whole.digest);
    FUZZ_CHECK(split.last == whole.last);
    FUZZ_CHECK(split.last == 0 || strcmp(split.err, whole.err) == 0);
    return 0;
}
