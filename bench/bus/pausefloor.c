/* pausefloor.c - the floor under the drain's self-caused pause figure: the
 * same measurement around a loop that does nothing.
 *
 *   pausefloor [--cpu C] [--seconds S] [--spin-ns N] [--all-steps]
 *
 * A drain thread's self-caused pause (collector/collector.h, docs/formats.md's
 * self_pause_us) is the wall time from the end of one pass to the start of
 * the next, less the larger of the time the thread was not running (from its
 * CPU time, read at the end of a pass that a back-off follows) and the steps
 * of 10 us or more between two of its clock reads with only constant work
 * between them (the machine's time, charged as the thread's where the host
 * does not report it as stolen). This program pinned to CPU C runs the same
 * bookkeeping around an empty "pass" and a spin of N ns between passes
 * (default 2000, the collector's back-off), and prints, per second, the
 * longest self-caused pause it saw: what is left charged to a thread that
 * does nothing. With --all-steps no step is taken off: timer ticks,
 * interrupts and the host's unreported stops then all count as the running
 * thread's time.
 * One line a second: "second longest_self_pause_us longest_wall_pause_us",
 * then the median and maximum of the per-second figures.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SECONDS_MAX 600

static int64_t clock_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int cpu = -1, seconds = 10;
	int64_t spin_ns = 2000;
	int machine = 1, bad = 0;
	for (int i = 1; i < argc; i++) {
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--all-steps"))
			machine = 0;
		else if (!value)
			bad = 1;
		else if (!strcmp(argv[i], "--cpu"))
			cpu = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--spin-ns"))
			spin_ns = atoll(argv[++i]);
		else
			bad = 1;
	}
	if (bad || seconds < 1 || seconds > SECONDS_MAX || spin_ns < 0) {
		fprintf(stderr, "usage: pausefloor [--cpu C] [--seconds 1..%d] [--spin-ns N] [--all-steps]\n",
			SECONDS_MAX);
		return 2;
	}
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			perror("pausefloor: sched_setaffinity");
	}
	static int64_t self_max[SECONDS_MAX], wall_max[SECONDS_MAX];
	int64_t start = clock_of(CLOCK_MONOTONIC);
	int64_t end_wall = start, end_cpu = clock_of(CLOCK_THREAD_CPUTIME_ID);
	for (;;) {
		/* the gap: the collector's back-off, spinning on its own clock */
		int64_t until = end_wall + spin_ns, now, prev = end_wall, steps = 0;
		do {
			now = clock_of(CLOCK_MONOTONIC);
			if (now - prev >= 10000)
				steps += now - prev;
			prev = now;
		} while (now < until);
		int s = (int)((now - start) / 1000000000);
		if (s >= seconds)
			break;
		/* the next pass's start, measured as drain.c does */
		int64_t pause = now - end_wall, self = pause;
		if (pause >= 5000) {
			int64_t away = pause - (clock_of(CLOCK_THREAD_CPUTIME_ID) - end_cpu);
			int64_t not_ours = machine && steps > away ? steps : away;
			self = not_ours <= 0 ? pause : not_ours < pause ? pause - not_ours : 0;
		}
		if (self > self_max[s])
			self_max[s] = self;
		if (pause > wall_max[s])
			wall_max[s] = pause;
		/* an empty pass, then its end as drain.c records it */
		end_wall = clock_of(CLOCK_MONOTONIC);
		end_cpu = clock_of(CLOCK_THREAD_CPUTIME_ID);
	}
	for (int s = 0; s < seconds; s++)
		printf("%d %lld %lld\n", s, (long long)(self_max[s] / 1000), (long long)(wall_max[s] / 1000));
	qsort(self_max, (size_t)seconds, sizeof(self_max[0]), by_value);
	printf("longest self-caused pause a second, us: median %lld, max %lld\n",
	       (long long)(self_max[seconds / 2] / 1000), (long long)(self_max[seconds - 1] / 1000));
	return 0;
}
