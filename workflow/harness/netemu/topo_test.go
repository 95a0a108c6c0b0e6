package main

// Test fixtures for the integration test and the benchmark: three network namespaces
// (A, the emulator's M, B) joined by two veth pairs, plus a direct veth pair A-B for
// the baseline; a UDP echo server in B and a paced multi-flow prober in A, both in this
// test process (their sockets are created with setns on a locked thread, and a socket
// stays in the namespace it was created in); and the emulator binary, run in M.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	emuIPA    = "10.99.0.1" // A's end of the path through the emulator
	emuIPB    = "10.99.0.2"
	directIPA = "10.99.1.1" // A's end of the direct veth (baseline)
	directIPB = "10.99.1.2"
	echoPort  = 9000
	probeSize = 100 // UDP payload bytes, as in the 60 Hz game workloads
)

// requireRootAndIP skips unless the test can create namespaces.
func requireRootAndIP(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces and AF_PACKET sockets (run go test as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipped: the ip command (iproute2) is not installed")
	}
}

func cmdRun(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// topology names everything after the test's pid, so concurrent or crashed runs never
// collide; a crashed run's namespaces are removed by the next run (its pid is gone).
type topology struct {
	pid      int
	nsA, nsM string
	nsB      string
	va, ma   string // A <-> M
	mb, vb   string // M <-> B
	da, db   string // A <-> B, direct
	ifPrefix string
}

var staleNS = regexp.MustCompile(`^nse-test-(\d+)-[amb]$`)

func removeStaleNamespaces(t *testing.T) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		m := staleNS.FindStringSubmatch(fields[0])
		if m == nil {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // its test is still running
		}
		t.Logf("removing namespace %s left by a crashed run (pid %s)", fields[0], m[1])
		_ = cmdRun("ip", "netns", "delete", fields[0])
	}
}

// setupTopology builds the namespaces; teardown and the leftover check are registered
// with t.Cleanup before anything is created, so they also run when setup fails.
func setupTopology(t *testing.T) *topology {
	t.Helper()
	removeStaleNamespaces(t)
	pid := os.Getpid()
	p := fmt.Sprintf("n%d", pid)
	tp := &topology{
		pid: pid, ifPrefix: p,
		nsA: fmt.Sprintf("nse-test-%d-a", pid), nsM: fmt.Sprintf("nse-test-%d-m", pid), nsB: fmt.Sprintf("nse-test-%d-b", pid),
		va: p + "va", ma: p + "ma", mb: p + "mb", vb: p + "vb", da: p + "da", db: p + "db",
	}
	t.Cleanup(func() { tp.assertNoLeftovers(t) }) // runs last
	t.Cleanup(tp.teardown)
	must := func(name string, args ...string) {
		t.Helper()
		if err := cmdRun(name, args...); err != nil {
			t.Fatalf("topology setup: %v", err)
		}
	}
	for _, ns := range []string{tp.nsA, tp.nsM, tp.nsB} {
		must("ip", "netns", "add", ns)
		// IPv6 off before the veths exist (they inherit "default"), so no neighbour
		// discovery or MLD frames pass through the emulator and upset the counts.
		must("ip", "netns", "exec", ns, "sysctl", "-qw",
			"net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
		must("ip", "-n", ns, "link", "set", "lo", "up")
	}
	must("ip", "link", "add", tp.va, "netns", tp.nsA, "type", "veth", "peer", "name", tp.ma, "netns", tp.nsM)
	must("ip", "link", "add", tp.mb, "netns", tp.nsM, "type", "veth", "peer", "name", tp.vb, "netns", tp.nsB)
	must("ip", "link", "add", tp.da, "netns", tp.nsA, "type", "veth", "peer", "name", tp.db, "netns", tp.nsB)
	ifs := [][2]string{{tp.nsA, tp.va}, {tp.nsM, tp.ma}, {tp.nsM, tp.mb}, {tp.nsB, tp.vb}, {tp.nsA, tp.da}, {tp.nsB, tp.db}}
	// Offloads off on every veth end: with them on, AF_PACKET sees frames with
	// unfinished checksums (tx checksum offload) and GSO super-packets above the MTU.
	// Without ethtool the step cannot be done and the test would only measure that
	// (measured: 100 % of UDP probes through the emulator dropped by B's checksum
	// check), so it is skipped with the reason rather than failed.
	ethtool, err := exec.LookPath("ethtool")
	if err != nil {
		t.Skip("skipped: ethtool is not installed, so offloads cannot be turned off on the veths " +
			"(with tx checksum offload on, every UDP frame forwarded by AF_PACKET fails the receiver's " +
			"checksum check); install ethtool (Debian package ethtool)")
	}
	for _, x := range ifs {
		must("ip", "netns", "exec", x[0], ethtool, "-K", x[1], "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off")
	}
	must("ip", "-n", tp.nsA, "addr", "add", emuIPA+"/24", "dev", tp.va)
	must("ip", "-n", tp.nsB, "addr", "add", emuIPB+"/24", "dev", tp.vb)
	must("ip", "-n", tp.nsA, "addr", "add", directIPA+"/24", "dev", tp.da)
	must("ip", "-n", tp.nsB, "addr", "add", directIPB+"/24", "dev", tp.db)
	for _, x := range ifs {
		must("ip", "-n", x[0], "link", "set", x[1], "up")
	}
	return tp
}

func (tp *topology) teardown() {
	// Deleting a namespace deletes the veths in it (and their peers).
	for _, ns := range []string{tp.nsA, tp.nsM, tp.nsB} {
		_ = exec.Command("ip", "netns", "delete", ns).Run()
	}
}

// assertNoLeftovers checks namespaces, interfaces and child processes after teardown.
func (tp *topology) assertNoLeftovers(t *testing.T) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Errorf("leftover check: ip netns list: %v", err)
	}
	prefix := fmt.Sprintf("nse-test-%d-", tp.pid)
	if strings.Contains(string(out), prefix) {
		t.Errorf("namespaces left behind: %s", out)
	}
	links, err := exec.Command("ip", "-o", "link").Output()
	if err != nil {
		t.Errorf("leftover check: ip -o link: %v", err)
	}
	if strings.Contains(string(links), tp.ifPrefix+"v") || strings.Contains(string(links), tp.ifPrefix+"m") ||
		strings.Contains(string(links), tp.ifPrefix+"d") {
		t.Errorf("interfaces left behind in the root namespace: %s", links)
	}
	if kids := childProcesses(); len(kids) > 0 {
		t.Errorf("child processes left running: %v", kids)
	}
}

// childProcesses lists live children of this process (not zombies: exec.Cmd.Wait
// reaps its own).
func childProcesses() []string {
	me := os.Getpid()
	var kids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		rest := s[strings.LastIndexByte(s, ')')+2:] // after "pid (comm) "
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(me) && f[0] != "Z" {
			kids = append(kids, e.Name()+" "+s[:strings.LastIndexByte(s, ')')+1])
		}
	}
	return kids
}

// inNetns runs fn on an OS thread switched into namespace ns. If switching back fails
// the thread stays locked and dies with its goroutine, so no other goroutine ever runs
// in the wrong namespace.
func inNetns(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- fmt.Errorf("namespace %s: %w", ns, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := fn()
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// echoServer echoes every datagram on :echoPort in namespace B (both paths).
type echoServer struct {
	conn   *net.UDPConn
	echoed atomic.Uint64
	done   chan struct{}
}

func startEcho(t *testing.T, tp *topology) *echoServer {
	t.Helper()
	s := &echoServer{done: make(chan struct{})}
	err := inNetns(tp.nsB, func() error {
		var err error
		s.conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: echoPort})
		return err
	})
	if err != nil {
		t.Fatalf("echo server in %s: %v", tp.nsB, err)
	}
	_ = s.conn.SetReadBuffer(4 << 20)
	go func() {
		defer close(s.done)
		buf := make([]byte, 2048)
		for {
			n, addr, err := s.conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return // closed
			}
			if _, err := s.conn.WriteToUDPAddrPort(buf[:n], addr); err == nil {
				s.echoed.Add(1)
			}
		}
	}()
	t.Cleanup(func() { _ = s.conn.Close(); <-s.done })
	return s
}

// probeResult of one paced run. Sent/Received/RTTs cover the measured window (after
// the warm-up probes); SentAll/ReceivedAll every probe, for matching the counters.
type probeResult struct {
	Sent, Received       int
	SentAll, ReceivedAll int
	RTTsUs               []float64
}

func (r probeResult) lossFrac() float64 { return 1 - float64(r.Received)/float64(r.Sent) }

func pct(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(math.Min(float64(len(s)-1), math.Floor(q*float64(len(s)))))]
}

// prober holds `flows` UDP sockets in namespace A, each its own 5-tuple, to one target.
type prober struct {
	conns []*net.UDPConn
	base  time.Time
	mu    sync.Mutex
	// received per probe index; probe i was sent on conns[i%len(conns)]
	got    map[uint32]bool
	rtts   map[uint32]float64
	next   uint32 // first probe index of the next run
	wg     sync.WaitGroup
	closed bool
}

func newProber(t *testing.T, tp *topology, targetIP string, flows int) *prober {
	t.Helper()
	p := &prober{base: time.Now(), got: map[uint32]bool{}, rtts: map[uint32]float64{}}
	err := inNetns(tp.nsA, func() error {
		for range flows {
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(targetIP), Port: echoPort})
			if err != nil {
				return err
			}
			p.conns = append(p.conns, c)
		}
		return nil
	})
	if err != nil {
		p.close()
		t.Fatalf("prober sockets in %s: %v", tp.nsA, err)
	}
	for _, c := range p.conns {
		p.wg.Go(func() {
			buf := make([]byte, 2048)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return // closed
				}
				now := time.Since(p.base).Nanoseconds()
				if n < 16 {
					continue
				}
				sentNs := int64(binary.LittleEndian.Uint64(buf[0:8]))
				idx := binary.LittleEndian.Uint32(buf[12:16])
				p.mu.Lock()
				p.got[idx] = true
				p.rtts[idx] = float64(now-sentNs) / 1e3
				p.mu.Unlock()
			}
		})
	}
	t.Cleanup(p.close)
	return p
}

func (p *prober) close() {
	if p.closed {
		return
	}
	p.closed = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.wg.Wait()
}

// run sends `warm` + `n` probes round-robin over the flows at `totalHz` (each flow at
// totalHz/flows), paced by one thread sleeping with nanosleep (Go timers would add about
// 1 ms of lateness), then waits `drain` for late echoes. Probe indexes continue across
// runs of one prober, so a late echo is never mistaken for a new one.
func (p *prober) run(warm, n int, totalHz float64, drain time.Duration) probeResult {
	first := p.next
	p.next += uint32(warm + n)
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	intervalNs := 1e9 / totalHz
	start := time.Since(p.base).Nanoseconds()
	buf := make([]byte, probeSize)
	sentOK := make([]bool, warm+n)
	for i := range warm + n {
		due := start + int64(float64(i)*intervalNs)
		if d := due - time.Since(p.base).Nanoseconds(); d > 0 {
			ts := unix.NsecToTimespec(d)
			_ = unix.Nanosleep(&ts, nil)
		}
		flow := i % len(p.conns)
		binary.LittleEndian.PutUint64(buf[0:8], uint64(time.Since(p.base).Nanoseconds()))
		binary.LittleEndian.PutUint32(buf[8:12], uint32(flow))
		binary.LittleEndian.PutUint32(buf[12:16], first+uint32(i))
		_, err := p.conns[flow].Write(buf)
		sentOK[i] = err == nil
	}
	runtime.UnlockOSThread()
	time.Sleep(drain)
	var r probeResult
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ok := range sentOK {
		if !ok {
			continue
		}
		idx := first + uint32(i)
		r.SentAll++
		if p.got[idx] {
			r.ReceivedAll++
		}
		if i < warm {
			continue
		}
		r.Sent++
		if p.got[idx] {
			r.Received++
			r.RTTsUs = append(r.RTTsUs, p.rtts[idx])
		}
	}
	clear(p.got) // bounded memory; later runs use fresh indexes
	clear(p.rtts)
	return r
}

// buildEmulator builds this module's emulator into the test's temporary directory,
// without -race (the test binary may be race-instrumented; the emulator under test
// must not be). Go's build cache makes a second build in one run cheap.
//
// NETEMU_TEST_BIN=/path/to/netemu uses a prebuilt binary instead (for example one
// built with -race, or bin/netemu).
func buildEmulator(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NETEMU_TEST_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("NETEMU_TEST_BIN: %v", err)
		}
		return p
	}
	path := filepath.Join(t.TempDir(), "netemu")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if out, err := exec.Command(goBin, "build", "-o", path, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the emulator: go build: %v: %s", err, out)
	}
	return path
}

// emulator is one running netemu in namespace M.
type emulator struct {
	cmd       *exec.Cmd
	stderr    bytes.Buffer
	statsPath string
	exited    chan struct{}
	waitErr   error
}

func startEmulator(t *testing.T, tp *topology, bin string, args ...string) *emulator {
	t.Helper()
	e := &emulator{statsPath: filepath.Join(t.TempDir(), "netemu-stats.json"), exited: make(chan struct{})}
	// -duration is a safety net: an emulator orphaned by a crashed test stops by itself.
	full := append([]string{"netns", "exec", tp.nsM, bin, "-a", tp.ma, "-b", tp.mb,
		"-stats-out", e.statsPath, "-duration", "120s"}, args...)
	e.cmd = exec.Command("ip", full...) // ip netns exec execs the binary: same pid
	e.cmd.Stderr = &e.stderr
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := e.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cmd.Start(); err != nil {
		t.Fatalf("starting netemu: %v", err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		first := ""
		if sc.Scan() {
			first = sc.Text()
		}
		ready <- first
		for sc.Scan() { // drain, so the emulator never blocks on a full pipe
		}
		e.waitErr = e.cmd.Wait()
		close(e.exited)
	}()
	t.Cleanup(func() { e.kill() })
	want := fmt.Sprintf("NETEMU READY a=%s b=%s", tp.ma, tp.mb)
	select {
	case line := <-ready:
		if line != want {
			e.kill()
			t.Fatalf("netemu first stdout line %q, want %q; stderr: %s", line, want, e.stderr.String())
		}
	case <-time.After(5 * time.Second):
		e.kill()
		t.Fatalf("netemu not ready within 5 s; stderr: %s", e.stderr.String())
	}
	return e
}

func (e *emulator) kill() {
	select {
	case <-e.exited:
		return
	default:
	}
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.exited
}

// stop sends SIGTERM, expects exit 0 within 5 s and returns the -stats-out report.
func (e *emulator) stop(t *testing.T) *Report {
	t.Helper()
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(5 * time.Second):
		e.kill()
		t.Fatalf("netemu did not exit within 5 s of SIGTERM; stderr: %s", e.stderr.String())
	}
	if e.waitErr != nil {
		t.Fatalf("netemu exit: %v (want 0); stderr: %s", e.waitErr, e.stderr.String())
	}
	b, err := os.ReadFile(e.statsPath)
	if err != nil {
		t.Fatalf("netemu -stats-out: %v", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("netemu -stats-out %s: %v", e.statsPath, err)
	}
	return &r
}

// cpuSeconds is the emulator's user+system CPU so far, from /proc/PID/stat.
func (e *emulator) cpuSeconds() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", e.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

func ipIn(d DirReport) uint64  { return d.FramesIn - d.NonIPFramesIn }
func ipOut(d DirReport) uint64 { return d.FramesOut - d.NonIPFramesOut }

// framesDropped sums every way a direction lost a frame.
func framesDropped(d DirReport) uint64 {
	return d.DroppedLoss + d.DroppedQueue + d.DroppedSocket + d.SendErrors
}
