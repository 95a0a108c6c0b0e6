// Package sched sends on time. Go's timers wake up to about a millisecond late because
// the runtime's netpoller sleeps in whole milliseconds, which would swamp the
// sub-millisecond RTTs being measured. A Dispatcher instead runs every periodic task
// of a process on one OS thread that sleeps with clock_nanosleep to absolute
// CLOCK_MONOTONIC deadlines, with the thread's timer slack set to 1 ns.
package sched

import (
	"container/heap"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Go's monotonic clock is CLOCK_MONOTONIC read through the vDSO; unix.ClockGettime
// would be a real system call (about 5 % of the emulator's CPU at 200 players). Now
// therefore reads Go's clock and shifts it by the offset to CLOCK_MONOTONIC, taken once.
var (
	baseTime = time.Now()
	baseMono = monoOffset()
)

// monoOffset is CLOCK_MONOTONIC minus Go's monotonic reading. Of several samples it keeps
// the one whose clock_gettime call was bracketed most tightly, so a preemption between the
// two readings cannot skew every timestamp of the process.
func monoOffset() int64 {
	best, bestGap := int64(0), int64(-1)
	for range 50 {
		var ts unix.Timespec
		a := int64(time.Since(baseTime))
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		b := int64(time.Since(baseTime))
		if gap := b - a; bestGap < 0 || gap < bestGap {
			best, bestGap = ts.Nano()-(a+b)/2, gap
		}
	}
	return best
}

// Now returns CLOCK_MONOTONIC in nanoseconds, the clock of every deadline and RTT.
func Now() int64 {
	return baseMono + int64(time.Since(baseTime))
}

// SleepUntil sleeps until the monotonic deadline (absolute, so no drift accumulates). It
// returns only once Now() has reached the deadline, so no lateness is ever negative.
func SleepUntil(deadline int64) {
	for Now() < deadline {
		ts := unix.NsecToTimespec(deadline)
		// A raw system call keeps this thread's P: an ordinary one hands the P off to the
		// scheduler, and the runtime's monitor thread then wakes every ~20 µs to retake it
		// (10-24 % of the emulator's CPU). The precision threads run with a spare P
		// (GOMAXPROCS is raised by one), and sleeps are short (at most 2 ms), so holding the
		// P costs nothing; an EINTR from a preemption signal just sleeps again.
		unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, uintptr(unix.CLOCK_MONOTONIC), uintptr(unix.TIMER_ABSTIME),
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	}
}

// EpollWaitUntil waits on an epoll set until something is ready or the monotonic
// deadline (now is the time now), whichever comes first, and returns the ready events. It
// is epoll_pwait2 (a nanosecond timeout, Linux 5.11) as a raw system call that keeps the
// caller's P, like SleepUntil, so a dispatcher can wait for its next send and for
// arriving messages at once (transport.Poller). Older kernels get epoll_wait for the
// whole milliseconds and, if nothing arrived, SleepUntil for the rest. EINTR is returned.
func EpollWaitUntil(epfd int, events []unix.EpollEvent, deadline, now int64) (int, error) {
	timeout := max(deadline-now, 0)
	if !noPwait2.Load() {
		ts := unix.NsecToTimespec(timeout)
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
			uintptr(len(events)), uintptr(unsafe.Pointer(&ts)), 0, 0)
		if e != unix.ENOSYS {
			if e != 0 {
				return 0, e
			}
			return int(n), nil
		}
		noPwait2.Store(true)
	}
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(timeout/1e6), 0, 0)
	if e != 0 {
		return 0, e
	}
	if n == 0 {
		SleepUntil(deadline)
	}
	return int(n), nil
}

// noPwait2 is set once the kernel said it has no epoll_pwait2.
var noPwait2 atomic.Bool

// PrecisionThread locks the calling goroutine to its OS thread and sets the thread's
// timer slack to 1 ns (the default 50 µs slack would add to every wake-up).
//
// SCHED_FIFO for this thread was tried and rejected: a real-time thread that must take
// a P back from the Go scheduler after each sleep inverts priorities with the threads
// holding the Ps, and send lateness p99 at 200 players went from 0.26 ms to 0.9 s.
func PrecisionThread() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

// Task is a scheduled action. Fire runs at (or just after) due; now is the monotonic
// time it actually started. It returns the next due time, or ok=false to stop.
type Task interface {
	Fire(due, now int64) (next int64, ok bool)
}

type entry struct {
	due  int64
	task Task
}

type entries []entry

func (e entries) Len() int           { return len(e) }
func (e entries) Less(i, j int) bool { return e[i].due < e[j].due }
func (e entries) Swap(i, j int)      { e[i], e[j] = e[j], e[i] }
func (e *entries) Push(x any)        { *e = append(*e, x.(entry)) }
func (e *entries) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// maxIdleSleep bounds a sleep so tasks added from other goroutines and Stop are seen
// within this long.
const maxIdleSleep = 2_000_000

// Dispatcher runs tasks in deadline order on one precision thread.
type Dispatcher struct {
	mu      sync.Mutex
	pending []entry // added from other goroutines, merged on the next wake-up
	stopped bool
	h       entries
	// CoalesceNs lets a wake-up wait this long past the earliest deadline, so that
	// tasks due close together share one wake-up: a timer slack. It trades lateness
	// (measured and logged for every send) for fewer context switches; at 200 players
	// and 60 Hz, 100 µs cut the emulator's CPU by a fifth and did not raise the
	// lateness p99, because fewer wake-ups also means less contention.
	CoalesceNs int64
	// Wait, if set, replaces the sleep between wake-ups: it must return by deadline
	// (CLOCK_MONOTONIC ns; now is the time it is called) and may return earlier. A
	// transport's receive path runs in it (transport.Poller), on this thread.
	Wait func(deadline, now int64)
}

// Add schedules task at the monotonic time due. Safe from any goroutine.
func (d *Dispatcher) Add(due int64, task Task) {
	d.mu.Lock()
	d.pending = append(d.pending, entry{due, task})
	d.mu.Unlock()
}

// Stop makes Run return within about 2 ms.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
}

// Run runs tasks until Stop. It must run on its own goroutine.
func (d *Dispatcher) Run() {
	PrecisionThread()
	defer runtime.UnlockOSThread()
	for {
		d.mu.Lock()
		if d.stopped {
			d.mu.Unlock()
			return
		}
		for _, e := range d.pending {
			heap.Push(&d.h, e)
		}
		d.pending = d.pending[:0]
		d.mu.Unlock()

		now := Now()
		for len(d.h) > 0 && d.h[0].due <= now {
			e := d.h[0]
			next, ok := e.task.Fire(e.due, now)
			if ok {
				d.h[0].due = next
				heap.Fix(&d.h, 0)
			} else {
				heap.Pop(&d.h)
			}
			now = Now()
		}
		wake := now + maxIdleSleep
		if len(d.h) > 0 && d.h[0].due+d.CoalesceNs < wake {
			wake = d.h[0].due + d.CoalesceNs
		}
		if d.Wait != nil {
			d.Wait(wake, now)
		} else {
			SleepUntil(wake)
		}
	}
}
