#!/usr/bin/env python3
"""Where one thread's samples go, by the code that did the work (ANALYSIS.md's "(g): one event loop is the limit").

Record a client, then turn the profile into text with each sample's thread name:

    perf record -F 2000 -g -o g.data -- courier-bench --scenario g --base http://127.0.0.1:PORT \
        --tls-base https://127.0.0.1:PORT2 --h2-base https://127.0.0.1:PORT3 --cert ca.der --cert-pem ca.pem \
        --requests 30000 --concurrency 64 --scratch DIR
    perf script -i g.data -F comm,ip,sym > g.txt
    Benchmarks/Scripts/thread_share.py g.txt                  # the samples of each thread
    Benchmarks/Scripts/thread_share.py g.txt NIO-SGLTN-1-#2   # one thread's, by category

A sample is charged to its innermost frame that is neither the Swift runtime (retain/release, allocation, value
witnesses, metadata), the standard library (strings, collections) nor libc's allocator and memory functions: the
code that asked for that work. That frame's
symbol puts it in the first category whose pattern it matches.
"""
import collections
import re
import sys

CATEGORIES = [
    ("NIOHTTP2 stream channels and the multiplexer",
     r"HTTP2StreamChannel|StreamChannelList|StreamChannelFlowController|Multiplexer"),
    ("HTTP/2 frames to HTTP/1 parts and back (NIOHTTP2's codec, NIOHTTP1's types)",
     r"HTTP2FramePayloadToHTTP1|BaseClientCodec|http2HeaderBlock|normalizeHTTPHeaders|appendRegularHeaders"
     r"|HTTPResponseHead|HTTPRequestHead|HTTPHeaders"),
    ("channel pipelines (NIOCore)", r"ChannelPipeline|ChannelHandlerContext|_ChannelInboundHandler"
     r"|_ChannelOutboundHandler|NIOAny"),
    ("futures and promises (NIOCore)",
     r"EventLoopFuture|EventLoopPromise|CallbackList|makeCompletedFuture|makeSucceededFuture|makeFailedFuture"),
    ("scheduled tasks (timers)", r"ScheduledTask|scheduleTask|Heap|UnderlyingTask|_prepareToSchedule|Scheduled"),
    ("HPACK", r"NIOHPACK|HPACK|Huffman"),
    ("NIOHTTP2 header validation",
     r"isValidField|HeaderBlockValidator|HeaderFieldName|ContentLengthVerifier|PseudoHeaders"),
    ("NIOHTTP2 connection (state machine, frame coding, flow control)",
     r"HTTP2ConnectionStateMachine|NIOHTTP20A7Handler|HTTP2FrameDecoder|HTTP2FrameEncoder|OutboundFlowControl"
     r"|ConcurrentStreamBuffer|InboundWindow|StreamMap|HTTP2StreamState|HTTP2Frame|StreamFlowControl"
     r"|CircularBuffer.*NIOHTTP2|ReceivingDataState|SendingDataState|StateMachineResultWithEffect"),
    ("TLS (NIOSSL, BoringSSL)", r"NIOSSL|BoringSSL|aes_|gcm_|sha256"),
    ("Courier (the task engine, URLSession)", r"^\$s7Courier|^\$s11CourierHTTP"),
    ("Courier's transport", r"^\$s16CourierTransport"),
    ("sockets and the event loop (NIOPosix)", r"NIOPosix"),
    ("the kernel", r"^(entry_|do_syscall|__x64_|_raw_spin|finish_task_switch|tcp_|__tcp|ip_|skb|__sys)"),
]
RUNTIME = re.compile(
    r"^(swift_|_swift|swift::|__swift::|tryCast|objectdestroy|tuple_|\[unknown\]|malloc|_int_|cfree|free|__mem"
    r"|__malloc|unlink_chunk|pthread_|\$sS[a-zA-Z]"
    r"|__GI|__tls|getCache|__swift_instantiate|\$ss|\$s.*(WOh|WOe|WOy|WOs|WOc|WOb|WOd|Wb|wc|wx|wb|wcp|wxx|Tm|Cfd|CfD"
    r"|Wl|Ma|Mn)$)")


def samples(path):
    """(thread name, frames innermost first) of each sample."""
    thread, frames = None, []
    for line in open(path, errors="replace"):
        if not line.strip():
            if thread is not None:
                yield thread, frames
            thread, frames = None, []
        elif line[0] not in " \t":
            thread = line.split()[0]
        else:
            parts = line.strip().split(None, 1)
            frames.append(parts[1] if len(parts) == 2 else "?")
    if thread is not None:
        yield thread, frames


def category(frames):
    for frame in frames:
        if RUNTIME.match(frame):
            continue
        for name, pattern in CATEGORIES:
            if re.search(pattern, frame):
                return name
        return "other"
    return "the runtime and allocator alone"


def main():
    path = sys.argv[1]
    wanted = sys.argv[2] if len(sys.argv) > 2 else None
    counts = collections.Counter()
    total = 0
    for thread, frames in samples(path):
        if wanted is None:
            counts[thread] += 1
        elif thread == wanted:
            counts[category(frames)] += 1
        else:
            continue
        total += 1
    print(f"{total} samples" + (f" of {wanted}" if wanted else ", by thread"))
    for name, count in counts.most_common():
        print(f"{100 * count / total:5.1f} %  {name}")


if __name__ == "__main__":
    main()
