/* Clocks: monotonic for durations, wall for timestamps. */
#ifndef OG_CORE_CLOCK_H
#define OG_CORE_CLOCK_H

#include <stdint.h>

uint64_t core_mono_ns(void); /* CLOCK_MONOTONIC, nanoseconds */
uint64_t core_wall_ms(void); /* CLOCK_REALTIME, milliseconds since the Unix epoch */
uint64_t core_wall_us(void); /* CLOCK_REALTIME, microseconds since the Unix epoch */

#endif
