; The program of docs/examples/drift without RUNTIME_DESKEW: it fails (docs/clocks.md).
; Two TSPs whose oscillators differ by 200 ppm run 10^8 cycles; every 400,000
; cycles queue 0 re-aligns the chip's time with RUNTIME_DESKEW (seed 000 §3.3)
; and restarts the data queue with NOTIFY; queue 1 then sends 8 vectors to
; tsp1, whose RECV is scheduled 50 cycles after the vectors arrive.
; Run:  fabricvp run platforms/groq-node.yaml --programs docs/examples/drift-nodeskew \
;         -p sys.tsps_per_node=2 -p sys.node0.tsp0.clock_ppm=-100 -p sys.node0.tsp1.clock_ppm=100
.tsp sys.node0.tsp0

.queue 0                  ; time keeper: the other queues are parked in SYNC meanwhile
.rept 250
    NOP 399740
    NOP 256               ; no resynchronization: drift accumulates
    NOTIFY                ; restart queue 1 four cycles later
.endr

.queue 1                  ; data: 8 vectors to tsp1 (port 0), 104 cycles after each NOTIFY
.rept 250
    SYNC
    NOP 100
    SEND p0, @0, 8
.endr
