.tsp sys.node0.tsp3
.queue 0
WAIT 1234
NOP 10
SEND p2, [0,1,0,100], 64
RECV p2, @70000, 64
ADD.fp32 [0,0,0,0], @100, @200, 64
ADD.bf16 @1, @2, @3, 1
ADD.fp16 @1, @2, @3, 1
ADD.int32 @1, @2, @3, 1
COPY @300, @100, 64
.queue 5
SYNC
NOTIFY
DESKEW
TRANSMIT p3
POLL p0
RUNTIME_DESKEW 300
RDHAC @100 ; comment
# comment
.rept 3
NOP 1
.endr
.queue 6
NOP 3
LOOP 2, 10, HOST 3
