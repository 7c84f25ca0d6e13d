package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func heapFree() uint64 {
	s := []metrics.Sample{{Name: heapFreeMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Garbage from a burst, once collected, is held as free heap; the
// releaser hands it back to the OS instead of keeping it resident.
func TestReleaseIdleMemoryReturnsFreeHeap(t *testing.T) {
	const burst = 64 << 20
	old := debug.SetGCPercent(-1) // the burst stays until collected below
	defer debug.SetGCPercent(old)
	blocks := make([][]byte, 64)
	for i := range blocks {
		blocks[i] = make([]byte, burst/len(blocks))
		blocks[i][0] = 1
	}
	runtime.KeepAlive(blocks)
	blocks = nil
	runtime.GC()
	if free := heapFree(); free < burst/2 {
		t.Fatalf("setup: the runtime already returned the burst (%d MB free)", free>>20)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { releaseIdleMemory(ctx, 10*time.Millisecond, 8<<20); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for heapFree() >= 8<<20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if free := heapFree(); free >= 8<<20 {
		t.Errorf("%d MB of free heap still held after the releaser ran", free>>20)
	}
}
