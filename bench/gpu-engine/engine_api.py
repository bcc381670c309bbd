"""What an engine hands to server.py (shared by engine_cb.py and the tests' fake engine)."""

from collections import namedtuple

# tokens: all ids generated so far (cumulative); finished: no more output will come; error: message or None;
# queue_s: seconds from submission until the scheduler first admitted the request, when the engine knows it.
EngineOutput = namedtuple("EngineOutput", "tokens finished error queue_s", defaults=(False, None, None))

# running: admitted requests (prefilling or decoding, holding KV blocks); waiting: queued or preempted;
# steps: forward passes so far (None when the engine does not count them).
EngineSnapshot = namedtuple("EngineSnapshot", "running waiting kv_blocks_total kv_blocks_used steps")
