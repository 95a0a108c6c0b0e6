using System;
using System.Net.Sockets;
using System.Runtime.InteropServices;

namespace Netstick.Mono
{
    /// <summary>
    /// Readiness of many sockets through one epoll instance: registering a socket once and collecting only
    /// the ready ones keeps a wake-up's cost independent of how many players are connected (ppoll over
    /// every socket costs microseconds per hundred sockets, twice per wake-up). Waiting is a ppoll(2) on
    /// the epoll descriptor itself, whose timeout is in nanoseconds (epoll_wait's is in milliseconds);
    /// the ready sockets are then read with a non-blocking epoll_wait. Level-triggered.
    /// </summary>
    internal sealed class EPoll : IDisposable
    {
        public const uint In = 0x001;
        public const uint Out = 0x004;
        public const uint Err = 0x008;
        public const uint Hup = 0x010;

        private const int CtlAdd = 1;
        private const int CtlDel = 2;
        private const int CtlMod = 3;
        private const int CloExec = 0x80000;
        private const int EIntr = 4;
        private const int MaxEvents = 256;

        // struct epoll_event is packed on x86-64 (12 bytes: events, then the 64-bit data) and naturally
        // aligned elsewhere (16 bytes, data at offset 8).
        private static readonly int EventSize = RuntimeInformation.ProcessArchitecture == Architecture.X64 ? 12 : 16;
        private static readonly int DataOffset = RuntimeInformation.ProcessArchitecture == Architecture.X64 ? 4 : 8;

        [StructLayout(LayoutKind.Sequential)]
        private struct PollFd
        {
            public int Fd;
            public short Events;
            public short Revents;
        }

        [StructLayout(LayoutKind.Sequential)]
        private struct Timespec
        {
            public long Sec;
            public long Nsec;
        }

        [DllImport("libc", EntryPoint = "epoll_create1", SetLastError = true)]
        private static extern int EpollCreate1(int flags);

        [DllImport("libc", EntryPoint = "epoll_ctl", SetLastError = true)]
        private static extern int EpollCtl(int epfd, int op, int fd, IntPtr ev);

        [DllImport("libc", EntryPoint = "epoll_wait", SetLastError = true)]
        private static extern int EpollWait(int epfd, IntPtr events, int maxevents, int timeoutMs);

        [DllImport("libc", EntryPoint = "ppoll", SetLastError = true)]
        private static extern int PPoll(ref PollFd fd, UIntPtr nfds, ref Timespec timeout, IntPtr sigmask);

        [DllImport("libc", EntryPoint = "close", SetLastError = true)]
        private static extern int Close(int fd);

        private readonly int epfd;
        private readonly IntPtr events = Marshal.AllocHGlobal(MaxEvents * 16);
        private readonly IntPtr one = Marshal.AllocHGlobal(16);
        private bool disposed;

        public EPoll()
        {
            epfd = EpollCreate1(CloExec);
            if (epfd < 0)
            {
                throw new SocketException(Marshal.GetLastWin32Error());
            }
        }

        /// <summary>Watches a socket for input (and output when wantWrite); token comes back with its events.</summary>
        public void Add(Socket s, long token, bool wantWrite)
        {
            Ctl(CtlAdd, s, token, wantWrite);
        }

        /// <summary>Changes whether a watched socket is also watched for output.</summary>
        public void Modify(Socket s, long token, bool wantWrite)
        {
            Ctl(CtlMod, s, token, wantWrite);
        }

        /// <summary>Stops watching a socket (before closing it; a closed descriptor leaves epoll by itself too).</summary>
        public void Remove(Socket s)
        {
            try
            {
                EpollCtl(epfd, CtlDel, s.Handle.ToInt32(), one);
            }
            catch (ObjectDisposedException)
            {
            }
        }

        private void Ctl(int op, Socket s, long token, bool wantWrite)
        {
            Marshal.WriteInt32(one, 0, (int)(In | (wantWrite ? Out : 0)));
            Marshal.WriteInt64(one, DataOffset, token);
            if (EpollCtl(epfd, op, s.Handle.ToInt32(), one) != 0)
            {
                throw new SocketException(Marshal.GetLastWin32Error());
            }
        }

        /// <summary>Blocks until a watched socket is ready or timeoutNs passed (a signal ends it early too).</summary>
        public void Wait(long timeoutNs)
        {
            var fd = new PollFd { Fd = epfd, Events = (short)In };
            var ts = new Timespec { Sec = Math.Max(0, timeoutNs) / 1000000000L, Nsec = Math.Max(0, timeoutNs) % 1000000000L };
            if (PPoll(ref fd, (UIntPtr)1, ref ts, IntPtr.Zero) < 0 && Marshal.GetLastWin32Error() != EIntr)
            {
                throw new SocketException(Marshal.GetLastWin32Error());
            }
        }

        /// <summary>Collects the ready sockets without waiting; returns how many (see <see cref="Token"/>, <see cref="Events"/>).</summary>
        public int Collect()
        {
            int n = EpollWait(epfd, events, MaxEvents, 0);
            if (n < 0)
            {
                int errno = Marshal.GetLastWin32Error();
                if (errno == EIntr)
                {
                    return 0;
                }
                throw new SocketException(errno);
            }
            return n;
        }

        /// <summary>The token of the i-th ready socket of the last <see cref="Collect"/>.</summary>
        public long Token(int i)
        {
            return Marshal.ReadInt64(events, i * EventSize + DataOffset);
        }

        /// <summary>The events (In, Out, Err, Hup bits) of the i-th ready socket.</summary>
        public uint Events(int i)
        {
            return (uint)Marshal.ReadInt32(events, i * EventSize);
        }

        public void Dispose()
        {
            if (disposed)
            {
                return;
            }
            disposed = true;
            Close(epfd);
            Marshal.FreeHGlobal(events);
            Marshal.FreeHGlobal(one);
        }
    }
}
