using System;
using System.Collections.Generic;
using System.Net.Sockets;
using System.Runtime.InteropServices;

namespace Netstick.Mono
{
    /// <summary>
    /// Waits for socket readiness with ppoll(2), whose timeout is in nanoseconds: mono's Socket.Select and
    /// Thread.Sleep round to milliseconds, which would add up to a millisecond of lateness to every
    /// scheduled send and tick. The host's loop blocks here between steps instead of spinning.
    /// </summary>
    internal sealed class Poller
    {
        public const short PollIn = 0x001;
        public const short PollOut = 0x004;
        public const short PollErr = 0x008;
        public const short PollHup = 0x010;

        private const int PrSetTimerslack = 29;
        private const int EIntr = 4;

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

        [DllImport("libc", EntryPoint = "ppoll", SetLastError = true)]
        private static extern int PPoll([In, Out] PollFd[] fds, UIntPtr nfds, ref Timespec timeout, IntPtr sigmask);

        [DllImport("libc", EntryPoint = "prctl", SetLastError = true)]
        private static extern int Prctl(int option, UIntPtr arg2, UIntPtr arg3, UIntPtr arg4, UIntPtr arg5);

        private PollFd[] fds = new PollFd[16];
        private int count;

        /// <summary>
        /// Sets the calling thread's timer slack to 1 ns: the default 50 µs would be added to every
        /// wake-up. Best effort (false where prctl is missing).
        /// </summary>
        public static bool PreciseTimers()
        {
            try
            {
                return Prctl(PrSetTimerslack, (UIntPtr)1, UIntPtr.Zero, UIntPtr.Zero, UIntPtr.Zero) == 0;
            }
            catch (EntryPointNotFoundException)
            {
                return false;
            }
            catch (DllNotFoundException)
            {
                return false;
            }
        }

        /// <summary>Forgets the sockets of the last wait.</summary>
        public void Clear()
        {
            count = 0;
        }

        /// <summary>Adds a socket to wait on; returns its slot for <see cref="Ready"/>.</summary>
        public int Add(Socket socket, bool wantWrite)
        {
            if (count == fds.Length)
            {
                Array.Resize(ref fds, fds.Length * 2);
            }
            fds[count] = new PollFd
            {
                Fd = socket.Handle.ToInt32(),
                Events = (short)(PollIn | (wantWrite ? PollOut : 0)),
                Revents = 0,
            };
            return count++;
        }

        /// <summary>The events of a slot after <see cref="Wait"/> (POLLIN, POLLOUT, POLLERR, POLLHUP bits).</summary>
        public short Ready(int slot)
        {
            return fds[slot].Revents;
        }

        /// <summary>
        /// Blocks until a socket is ready or timeoutNs passed (0: just look). Returns the number of ready
        /// sockets; 0 on timeout or when a signal interrupted the wait.
        /// </summary>
        public int Wait(long timeoutNs)
        {
            if (timeoutNs < 0)
            {
                timeoutNs = 0;
            }
            var ts = new Timespec { Sec = timeoutNs / 1000000000L, Nsec = timeoutNs % 1000000000L };
            for (int i = 0; i < count; i++)
            {
                fds[i].Revents = 0;
            }
            int n = PPoll(fds, (UIntPtr)count, ref ts, IntPtr.Zero);
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
    }

    /// <summary>A transport the mono host can block on between steps.</summary>
    internal interface IWaitable
    {
        /// <summary>Blocks until something arrived for the transport or timeoutNs passed.</summary>
        void Wait(long timeoutNs);
    }

    /// <summary>Helpers shared by the socket transports.</summary>
    internal static class Sockets
    {
        /// <summary>Resolves -host to one IPv4 or IPv6 address (IPv4 preferred, as Go's resolver on loopback).</summary>
        public static System.Net.IPAddress Resolve(string host)
        {
            System.Net.IPAddress ip;
            if (System.Net.IPAddress.TryParse(host, out ip))
            {
                return ip;
            }
            System.Net.IPAddress[] all = System.Net.Dns.GetHostAddresses(host);
            foreach (System.Net.IPAddress a in all)
            {
                if (a.AddressFamily == AddressFamily.InterNetwork)
                {
                    return a;
                }
            }
            if (all.Length == 0)
            {
                throw new SocketException((int)SocketError.HostNotFound);
            }
            return all[0];
        }

        /// <summary>host:port as Go prints it ([v6]:port for IPv6).</summary>
        public static string Format(System.Net.EndPoint ep)
        {
            var ip = ep as System.Net.IPEndPoint;
            if (ip == null)
            {
                return ep == null ? "" : ep.ToString();
            }
            System.Net.IPAddress a = ip.Address;
            if (a.IsIPv4MappedToIPv6)
            {
                a = a.MapToIPv4();
            }
            string host = a.AddressFamily == AddressFamily.InterNetworkV6 ? "[" + a + "]" : a.ToString();
            return host + ":" + ip.Port.ToString(System.Globalization.CultureInfo.InvariantCulture);
        }

        /// <summary>Closes a socket, ignoring errors of a socket already gone.</summary>
        public static void CloseQuietly(Socket s)
        {
            if (s == null)
            {
                return;
            }
            try
            {
                s.Close();
            }
            catch (ObjectDisposedException)
            {
            }
            catch (SocketException)
            {
            }
        }

        /// <summary>Copies into a buffer grown to fit (callbacks get messages starting at offset 0).</summary>
        public static byte[] Fit(byte[] buf, int length)
        {
            if (buf.Length >= length)
            {
                return buf;
            }
            return new byte[Math.Max(length, buf.Length * 2)];
        }

        /// <summary>Reads an int option from -param t.key=value; throws UsageException naming it.</summary>
        public static int IntOption(string transport, IDictionary<string, string> opts, string key, int def, int lo, int hi)
        {
            string s;
            if (opts == null || !opts.TryGetValue(key, out s))
            {
                return def;
            }
            int v;
            if (!int.TryParse(s, System.Globalization.NumberStyles.AllowLeadingSign,
                System.Globalization.CultureInfo.InvariantCulture, out v) || v < lo || v > hi)
            {
                throw new Netstick.Core.UsageException(string.Format(System.Globalization.CultureInfo.InvariantCulture,
                    "-param t.{0}={1} ({2} option): expected an integer in [{3}, {4}]", key, s, transport, lo, hi));
            }
            return v;
        }

        /// <summary>Refuses transport options the transport does not know (exit 2).</summary>
        public static void CheckOptions(string transport, IDictionary<string, string> opts, params string[] known)
        {
            if (opts == null)
            {
                return;
            }
            var allowed = new HashSet<string>(known);
            foreach (string k in opts.Keys)
            {
                if (!allowed.Contains(k))
                {
                    throw new Netstick.Core.UsageException(known.Length == 0
                        ? "-param t." + k + ": transport " + transport + " takes no options"
                        : "-param t." + k + ": unknown option of transport " + transport + " (expected one of "
                            + string.Join(", ", known) + ")");
                }
            }
        }
    }
}
