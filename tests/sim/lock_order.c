/* SPDX-License-Identifier: MIT */
/*
 * lock_order.c - a deadlock from a lock-order inversion.
 *
 * Transfers between two accounts lock the source account, then the
 * destination.  One worker moves money from a to b, the other from b to
 * a, so they take the two mutexes in opposite orders.  When each holds
 * its first mutex and waits for its second (taking a mutex is a point
 * where the scheduler may switch), neither can go on: every goroutine is
 * blocked and gort reports the deadlock.  Otherwise the balances add up.
 *
 * The fix: one lock order for everybody (say, by account number).
 */
#include "planted.h"

#define TRANSFERS 50

struct account {
    gort_mutex mu;
    long balance;
};

static struct account a = {GORT_MUTEX_INIT, 1000}, b = {GORT_MUTEX_INIT, 1000};
static gort_waitgroup wg;

static void transfer(struct account *from, struct account *to, long amount)
{
    gort_mutex_lock(&from->mu);
    /* BUG: the second lock is taken in the caller's order. */
    gort_mutex_lock(&to->mu);
    from->balance -= amount;
    to->balance += amount;
    gort_mutex_unlock(&to->mu);
    gort_mutex_unlock(&from->mu);
    NOTE("%c -> %c", from == &a ? 'a' : 'b', to == &a ? 'a' : 'b');
}

static void a_to_b(void *arg)
{
    (void)arg;
    for (int i = 0; i < TRANSFERS; i++)
        transfer(&a, &b, 3);
    gort_waitgroup_done(&wg);
}

static void b_to_a(void *arg)
{
    (void)arg;
    for (int i = 0; i < TRANSFERS; i++)
        transfer(&b, &a, 2);
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&wg, 2);
    gort_go(a_to_b, NULL);
    gort_go(b_to_a, NULL);
    gort_waitgroup_wait(&wg);
    NOTE("a=%ld b=%ld", a.balance, b.balance);
    BUG_IF_NOT(a.balance + b.balance == 2000, "money appeared or vanished");
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
