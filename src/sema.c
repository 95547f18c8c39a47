/*
 * sema.c - semaphores that park goroutines, keyed by address.  Mirrors
 * sema.go's semacquire/semrelease, on which the sync package is built.
 *
 * A semaphore is any uint32_t the caller owns; its value counts available
 * tickets.  Waiters for all addresses hash into 251 buckets (semTabSize in
 * sema.go: prime, so that addresses spaced by powers of two spread), each a
 * FIFO list of waiter records under the bucket's lock.  A waiter record
 * lives on the parked goroutine's own stack.
 *
 * Protocol (as Go): the releaser increments the value first, then wakes
 * the first waiter for that address; a woken waiter retries the
 * decrement.  With handoff, the releaser takes the ticket on the waiter's
 * behalf (s.ticket = 1) so no newcomer can barge in between.
 *
 * Invariants:
 *   - bucket.nwait >= the number of waiters queued in the bucket; it is
 *     incremented before the final check under the lock, so a releaser
 *     that sees nwait == 0 after its increment can skip the lock.
 *   - A waiter record is on at most one list, and only while its G waits.
 */
#include "runtime.h"

#include <string.h>

#define SEMTABSIZE 251

struct semawaiter {
    uint32_t *addr;
    struct g *g;
    struct semawaiter *next;
    uint32_t ticket; /* 1: the releaser acquired for us (handoff) */
};

struct semaroot {
    gort_lock lock;
    struct semawaiter *head, *tail;
    uint32_t nwait; /* atomic: waiters in this bucket (see invariants) */
    char pad[64 - sizeof(gort_lock) - 2 * sizeof(void *) - sizeof(uint32_t)];
};

static struct semaroot semtable[SEMTABSIZE];

static struct semaroot *semroot(uint32_t *addr)
{
    return &semtable[((uintptr_t)addr >> 3) % SEMTABSIZE];
}

static bool cansemacquire(uint32_t *addr)
{
    for (;;) {
        /* Seq-cst: the waiter's side of the Dekker handshake with
         * semrelease (nwait increment, then this load; the releaser does
         * value increment, then nwait load).  On success the CAS also
         * acquires what the releaser did before releasing. */
        uint32_t v = load_seqcst(addr);
        if (v == 0)
            return false;
        if (cas_acqrel(addr, v, v - 1))
            return true;
    }
}

static bool unlock_root(struct g *gp, void *lock)
{
    (void)gp;
    gort__unlock(lock);
    return true;
}

void gort__semacquire(uint32_t *addr, uint32_t reason)
{
    /* A runtime entry: honour a pending preemption request first, as Go's
     * function prologues do.  Without this, two goroutines handing the P
     * to each other through runnext would never yield to sysmon. */
    gort__preempt_check();
    if (cansemacquire(addr))
        return;
    struct g *gp = gort__getg();
    if (!gp)
        gort__throw("semacquire: not on a goroutine");
    struct semawaiter s = {addr, gp, NULL, 0};
    struct semaroot *root = semroot(addr);
    for (;;) {
        gort__lock(&root->lock);
        xadd_seqcst(&root->nwait, 1); /* Dekker: see cansemacquire */
        if (cansemacquire(addr)) {
            xadd_acqrel(&root->nwait, -1);
            gort__unlock(&root->lock);
            return;
        }
        s.next = NULL;
        s.ticket = 0;
        if (root->tail)
            root->tail->next = &s;
        else
            root->head = &s;
        root->tail = &s;
        gort__park(unlock_root, &root->lock, reason);
        if (s.ticket || cansemacquire(addr))
            return;
    }
}

/* Remove and return the first waiter for addr.  Root lock held. */
static struct semawaiter *dequeue(struct semaroot *root, uint32_t *addr)
{
    struct semawaiter *prev = NULL;
    for (struct semawaiter *s = root->head; s; prev = s, s = s->next) {
        if (s->addr != addr)
            continue;
        if (prev)
            prev->next = s->next;
        else
            root->head = s->next;
        if (root->tail == s)
            root->tail = prev;
        s->next = NULL;
        return s;
    }
    return NULL;
}

void gort__semrelease(uint32_t *addr, bool handoff)
{
    struct semaroot *root = semroot(addr);
    /* Seq-cst increment then seq-cst load of nwait: the releaser's side
     * of the Dekker handshake with semacquire (which increments nwait,
     * then re-reads the value), so either we see its nwait or it sees our
     * ticket.  The increment also publishes our writes (release). */
    xadd_seqcst(addr, 1);
    if (load_seqcst(&root->nwait) == 0)
        return;
    gort__lock(&root->lock);
    if (load_relaxed(&root->nwait) == 0) {
        gort__unlock(&root->lock);
        return;
    }
    struct semawaiter *s = dequeue(root, addr);
    if (s)
        xadd_acqrel(&root->nwait, -1);
    gort__unlock(&root->lock);
    if (!s)
        return;
    if (handoff && cansemacquire(addr))
        s->ticket = 1;
    gort__ready(s->g, true);
    gort__preempt_check();
}

void gort__semafini(void)
{
    /* Waiters of goroutines discarded at shutdown are forgotten. */
    memset(semtable, 0, sizeof semtable);
}
