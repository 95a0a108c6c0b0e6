package main

// One direction of the bridge: a receiving thread on the input interface and, unless
// the direction holds no frames, a sending thread on the output interface.

import (
	"errors"
	"runtime"
	"sync/atomic"
)

// Direction forwards frames from In to Out through Imp.
type Direction struct {
	Name   string // "ab" or "ba"
	In     *Link
	Out    *Link
	Imp    *Impairment
	Sched  *Scheduler // nil: direct mode (forwarded by the receiving thread)
	Stats  DirStats
	Params DirParams
}

// recvBufBytes holds any frame a veth can deliver, even a 64 KiB GSO super-packet
// when offloads were left on (it is then counted as a send error, not truncated).
const recvBufBytes = 65536 + 512

// RunReceiver reads frames until stopping is set. A receive error other than the
// periodic timeout (the interface went away) is passed to fatal and ends the thread.
func (d *Direction) RunReceiver(clock func() int64, stopping *atomic.Bool, fatal func(error)) {
	runtime.LockOSThread() // it sits in blocking recvfrom; never unlocked
	defer d.Stats.addThreadCPU()
	buf := make([]byte, recvBufBytes)
	st := &d.Stats
	for !stopping.Load() {
		n, err := d.In.Recv(buf)
		if errors.Is(err, errTimeout) {
			continue
		}
		if err != nil {
			if !stopping.Load() {
				fatal(err)
			}
			return
		}
		now := clock()
		data := buf[:n]
		st.FramesIn.Add(1)
		st.BytesIn.Add(uint64(n))
		if !IsIP(data) {
			st.NonIPIn.Add(1)
		}
		verdict, dep := d.Imp.Apply(data, now)
		switch verdict {
		case DropLoss:
			st.DroppedLoss.Add(1)
			continue
		case DropQueue:
			st.DroppedQueue.Add(1)
			continue
		}
		if d.Sched == nil {
			forward(d.Out, data, st)
			continue
		}
		f := newFrame(data)
		f.depNs = dep
		d.Sched.Push(f)
	}
}
