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
.queue 7
MUL.fp32 @10, @20, @30, 4, BCAST 2
SUB.fp16 @10, @20, @30, 4, SPREAD 2
MAX.fp32 @10, @20, @30, 4
RSQRT.fp32 @40, @50, 2
EXP.fp32 @40, @50, 2
SPLAT.fp32 @60, @70, 5, 1
NARROW.fp16 @80, @90, 1
WIDEN.bf16 @80, @90, 1
SUB.fp32 -, @0, @100, 4
MUL.fp32 -, FLY, @200, 4
MUL.fp32 @300, FLY, @400, 4, BCAST
SUB.fp32 -, @0, @100, 1
SPLAT.fp32 -, FLY, 5, 1
RSQRT.fp32 @600, FLY, 1
