/* SPDX-License-Identifier: MIT */
/*
 * sema.h - what sema.c offers the rest of the runtime: the runtime's
 * semaphores and notify lists.
 */
#ifndef GORT_SEMA_H
#define GORT_SEMA_H

#include "../include/gort.h"
#include "defs.h"

/* Semaphores (sema.c).  Mirrors sema.go.  semacquire1 parks until it can
 * take a unit from *addr; lifo queues the caller first among the waiters
 * on addr (a mutex waiter that has waited before).  semrelease adds a unit
 * and wakes the first waiter; with handoff the unit goes straight to that
 * waiter.  Both must run on a goroutine. */
GORT_HIDDEN void gort__semacquire1(uint32_t *addr, bool lifo,
                                   uint32_t reason);
GORT_HIDDEN void gort__semacquire(uint32_t *addr, uint32_t reason);
GORT_HIDDEN void gort__semrelease(uint32_t *addr, bool handoff);
GORT_HIDDEN void gort__semafini(void);
/* Notify lists (sema.c), on the storage of a gort_cond.  Mirrors
 * notifyList: add hands out a ticket (call it before dropping the user's
 * lock), wait parks until that ticket is notified, notifyone wakes the
 * oldest unnotified ticket, notifyall every ticket handed out.  The
 * list's lock ranks with the semaphore roots (object locks). */
GORT_HIDDEN uint32_t gort__notifylistadd(gort_cond *c);
GORT_HIDDEN void gort__notifylistwait(gort_cond *c, uint32_t ticket);
GORT_HIDDEN void gort__notifylistnotifyone(gort_cond *c);
GORT_HIDDEN void gort__notifylistnotifyall(gort_cond *c);

#endif /* GORT_SEMA_H */
