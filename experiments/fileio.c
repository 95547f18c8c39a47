/* SPDX-License-Identifier: MIT */
/*
 * fileio - is io_uring worth it for regular-file reads from goroutines?
 *
 *   build/experiments/fileio      (built when liburing is installed)
 *
 * Times 200,000 4 KiB reads from a cached file three ways: pread(2); one
 * io_uring read per submit-and-wait (what a goroutine blocking on its own
 * read would do); and 16 reads per submit (only possible when many reads
 * are ready at once).  On the machines gort is measured on, one op per
 * submit is no faster than pread, so gort reads regular files through the
 * syscall path (gort_pread and friends); see docs/design.md.
 */
#include <liburing.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(void){
  char path[]="/tmp/fileioXXXXXX"; int fd=mkstemp(path); unlink(path);
  static char buf[4096]; for(int i=0;i<256;i++) pwrite(fd,buf,4096,(off_t)i*4096);
  int N=200000; double t=now();
  for(int i=0;i<N;i++) pread(fd,buf,4096,(off_t)(i%256)*4096);
  double tp=(now()-t)/N;
  struct io_uring r; io_uring_queue_init(64,&r,0);
  t=now();
  for(int i=0;i<N;i++){ struct io_uring_sqe*s=io_uring_get_sqe(&r); io_uring_prep_read(s,fd,buf,4096,(i%256)*4096); io_uring_submit_and_wait(&r,1); struct io_uring_cqe*c; io_uring_wait_cqe(&r,&c); io_uring_cqe_seen(&r,c);}
  double tu=(now()-t)/N;
  t=now();
  for(int i=0;i<N;i+=16){ for(int k=0;k<16;k++){struct io_uring_sqe*s=io_uring_get_sqe(&r); io_uring_prep_read(s,fd,buf,4096,((i+k)%256)*4096);} io_uring_submit_and_wait(&r,16); struct io_uring_cqe*c; for(int k=0;k<16;k++){io_uring_wait_cqe(&r,&c); io_uring_cqe_seen(&r,c);} }
  double tb=(now()-t)/N;
  printf("pread %.2f us, io_uring one op a submit %.2f us, 16 a submit %.2f us per op\n",tp*1e6,tu*1e6,tb*1e6);
}
