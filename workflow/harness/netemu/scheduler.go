package main

// The departure heap of one direction and its sending thread.

import (
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// frame is a copy of a received frame waiting for its departure time.
type frame struct {
	data  []byte
	depNs int64
	seq   uint64 // arrival order: breaks ties, so equal departures keep FIFO order
}

// poolFrameBytes covers every frame when offloads are off (MTU 1500 + Ethernet header);
// larger ones get their own buffer.
const poolFrameBytes = 2048

var framePool = sync.Pool{New: func() any { return &frame{data: make([]byte, 0, poolFrameBytes)} }}

func newFrame(b []byte) *frame {
	f := framePool.Get().(*frame)
	if cap(f.data) < len(b) {
		f.data = make([]byte, 0, len(b))
	}
	f.data = append(f.data[:0], b...)
	return f
}

func freeFrame(f *frame) {
	if cap(f.data) == poolFrameBytes {
		framePool.Put(f)
	}
}

// Scheduler is a min-heap of frames by (departure, arrival order). The receiving
// thread pushes and the sending thread pops; the lock is held for a few heap steps.
type Scheduler struct {
	mu     sync.Mutex
	q      []*frame
	seq    uint64
	maxLen int
	// wake is signalled when a push makes a new head, so a sender waiting for a later
	// head (or for any frame) re-plans; capacity 1, so it never blocks the receiver.
	wake chan struct{}
}

func NewScheduler() *Scheduler { return &Scheduler{wake: make(chan struct{}, 1)} }

func less(a, b *frame) bool {
	return a.depNs < b.depNs || (a.depNs == b.depNs && a.seq < b.seq)
}

// Push adds a frame with f.depNs set.
func (s *Scheduler) Push(f *frame) {
	s.mu.Lock()
	f.seq = s.seq
	s.seq++
	s.q = append(s.q, f)
	i := len(s.q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(s.q[i], s.q[p]) {
			break
		}
		s.q[i], s.q[p] = s.q[p], s.q[i]
		i = (i - 1) / 2
	}
	newHead := i == 0
	if len(s.q) > s.maxLen {
		s.maxLen = len(s.q)
	}
	s.mu.Unlock()
	if newHead {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// PopDue pops the head if it is due at nowNs. Otherwise it returns nil, the head's
// departure time and whether any frame is waiting at all.
func (s *Scheduler) PopDue(nowNs int64) (f *frame, nextNs int64, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.q) == 0 {
		return nil, 0, false
	}
	head := s.q[0]
	if head.depNs > nowNs {
		return nil, head.depNs, true
	}
	last := len(s.q) - 1
	s.q[0] = s.q[last]
	s.q[last] = nil
	s.q = s.q[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s.q) && less(s.q[l], s.q[m]) {
			m = l
		}
		if r < len(s.q) && less(s.q[r], s.q[m]) {
			m = r
		}
		if m == i {
			break
		}
		s.q[i], s.q[m] = s.q[m], s.q[i]
		i = m
	}
	return head, 0, true
}

// Len is the number of frames waiting; MaxLen the most there ever were.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.q)
}

func (s *Scheduler) MaxLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxLen
}

const (
	// Go timers wake up to about a millisecond late (the netpoller sleeps in whole
	// milliseconds), so the coarse wait ends this long before the departure...
	coarseMarginNs = 3_000_000
	// ...and the rest is slept with nanosleep in steps this short, which also bounds
	// how late a frame is when a new, earlier head arrives during a step.
	fineStepNs = 200_000
)

// RunSender sends frames at their departure times until done is closed. It runs on
// its own OS thread with a 1 ns timer slack (the default 50 µs slack would be added to
// every nanosleep).
func (s *Scheduler) RunSender(out *Link, st *DirStats, clock func() int64, done <-chan struct{}) {
	runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	defer st.addThreadCPU()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-done:
			return
		default:
		}
		now := clock()
		f, next, pending := s.PopDue(now)
		if f != nil {
			st.Late.Add(now - f.depNs)
			forward(out, f.data, st)
			freeFrame(f)
			continue
		}
		if !pending {
			select {
			case <-s.wake:
			case <-done:
				return
			}
			continue
		}
		wait := next - clock()
		if wait > coarseMarginNs {
			timer.Reset(time.Duration(wait - coarseMarginNs))
			select {
			case <-s.wake:
			case <-timer.C:
			case <-done:
				timer.Stop()
				return
			}
			timer.Stop()
			continue
		}
		if wait > 0 {
			ts := unix.NsecToTimespec(min(wait, fineStepNs))
			_ = unix.Nanosleep(&ts, nil)
		}
	}
}

// forward sends one frame and counts it. Send errors are counted, and the first one
// of each direction is logged with a hint, because they usually mean offloads are on
// (frames larger than the MTU) or the interface went away.
func forward(out *Link, data []byte, st *DirStats) {
	if err := out.Send(data); err != nil {
		st.SendErrors.Add(1)
		st.firstSendErr.Do(func() {
			logf("%v (further send errors are only counted; frames above the MTU mean offloads are on: "+
				"ethtool -K DEV tx off rx off tso off gso off gro off on every veth end)", err)
		})
		return
	}
	st.FramesOut.Add(1)
	st.BytesOut.Add(uint64(len(data)))
	if !IsIP(data) {
		st.NonIPOut.Add(1)
	}
}
