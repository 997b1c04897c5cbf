/* The sandbox ("pause") process of every Pod on the kubelet node tier: holds the Pod's
 * namespaces, reaps orphans, exits on SIGINT or SIGTERM. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {}
}

int main(void) {
  struct sigaction on_stop = { .sa_handler = stop };
  struct sigaction on_child = { .sa_handler = reap, .sa_flags = SA_NOCLDSTOP };
  sigaction(SIGINT, &on_stop, NULL);
  sigaction(SIGTERM, &on_stop, NULL);
  sigaction(SIGCHLD, &on_child, NULL);
  for (;;) pause();
}
