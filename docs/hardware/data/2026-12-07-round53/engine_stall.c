// Written for round 53's second call, run in round 54
// (docs/hardware/h200.md): stalls the engine's
// thread alone, once. Preloaded into `latest`, it makes the main thread's
// first nanosleep after STALL_AT_S seconds (from the library's load) last
// STALL_S seconds more; every other thread (the CUDA backend's helper that
// reads the ring) sleeps as asked. No privilege needed, nothing changed in
// the product. Build: cc -shared -fPIC -O2 -o engine_stall.so engine_stall.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double loaded_s = -1;
static int stalled = 0;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((constructor)) static void on_load(void) { loaded_s = now_s(); }

int nanosleep(const struct timespec* req, struct timespec* rem) {
  static int (*real)(const struct timespec*, struct timespec*);
  if (!real) real = (int (*)(const struct timespec*, struct timespec*))dlsym(RTLD_NEXT, "nanosleep");
  if (!stalled && syscall(SYS_gettid) == getpid()) {
    const char* at = getenv("STALL_AT_S");
    const char* length = getenv("STALL_S");
    if (at && length && now_s() - loaded_s >= atof(at)) {
      stalled = 1;
      const double s = atof(length);
      struct timespec stall = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
      fprintf(stderr, "engine_stall: the main thread sleeps %.3f s more at %.3f s\n", s, now_s() - loaded_s);
      real(&stall, NULL);
    }
  }
  return real(req, rem);
}
