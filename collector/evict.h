/* evict.h - flushing a cache line from every cache: what tailbusd
 * --evict-lines does with each event line the drain has read to its end
 * (drain.c), and what bench/bus/ceiling --evict does the same way, so the
 * two are measured alike. Only a hint to the hardware: what the line holds
 * does not change. */
#ifndef TAILBUS_EVICT_H
#define TAILBUS_EVICT_H

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define TB_EVICT_NONE 0
#define TB_EVICT_CLFLUSH 1    /* x86-64: every x86-64 has it */
#define TB_EVICT_CLFLUSHOPT 2 /* x86: the unordered one, where CPUID says so */

/* The best way this CPU has. */
static inline int tb_evict_method(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23)))
		return TB_EVICT_CLFLUSHOPT;
	return TB_EVICT_CLFLUSH;
#else
	return TB_EVICT_NONE;
#endif
}

static inline const char *tb_evict_name(int how)
{
	return how == TB_EVICT_CLFLUSHOPT ? "clflushopt"
	       : how == TB_EVICT_CLFLUSH  ? "clflush"
					  : "nothing: this CPU has no instruction for it";
}

static inline void tb_evict_line(int how, const void *line)
{
#if defined(__x86_64__)
	if (how == TB_EVICT_CLFLUSHOPT)
		__asm__ volatile("clflushopt %0" : : "m"(*(const char *)line));
	else if (how == TB_EVICT_CLFLUSH)
		__asm__ volatile("clflush %0" : : "m"(*(const char *)line));
#else
	(void)how, (void)line;
#endif
}

#endif
