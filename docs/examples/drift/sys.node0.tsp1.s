; Receiver of docs/examples/drift (see sys.node0.tsp0.s).
.tsp sys.node0.tsp1

.queue 0
.rept 250
    NOP 399740
    RUNTIME_DESKEW 256
    NOTIFY
.endr

.queue 1                  ; the vectors are readable 445 cycles after the SEND: RECV 50 cycles later
.rept 250
    SYNC
    NOP 595
    RECV p0, @100, 8
.endr
