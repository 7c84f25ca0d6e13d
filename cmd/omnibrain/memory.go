package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// heapFreeMetric is heap memory the runtime holds but no object uses.
const heapFreeMetric = "/memory/classes/heap/free:bytes"

// How often the daemon checks for free heap to release, and how much
// makes it worth a forced collection.
const (
	releaseEvery     = 10 * time.Second
	releaseThreshold = 4 << 20
)

// releaseIdleMemory hands the heap's free pages back to the OS whenever,
// at a check, at least threshold bytes of them are held. After a burst (a
// few hundred searches, an import) the runtime's scavenger gives them
// back only slowly, so the idle daemon's resident size stayed tens of MB
// above its size after the start. It returns when ctx is done.
func releaseIdleMemory(ctx context.Context, every time.Duration, threshold uint64) {
	sample := []metrics.Sample{{Name: heapFreeMetric}}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Uint64() >= threshold {
			debug.FreeOSMemory()
		}
	}
}
