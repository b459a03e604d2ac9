/* fabricvp PsPIN-compatible handler API: switch configuration seen by
   handlers. The defaults are PsPIN's (4 clusters of 8 cores); a switch built
   with another cluster count compiles its handlers with -DNB_CLUSTERS=<n>
   (the `fabricvp run` command line does so), because task_t holds one
   scratchpad pointer per cluster. */
#pragma once

#ifndef NB_CLUSTERS
#define NB_CLUSTERS 4
#endif
#ifndef NB_CORES
#define NB_CORES 8
#endif
#define CORE_COUNT (NB_CLUSTERS * NB_CORES)

/* payload bytes of the default packet (1024-byte packets, headers included, in PsPIN's driver) */
#ifndef PKT_SIZE
#define PKT_SIZE 1024
#endif
