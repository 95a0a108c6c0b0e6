using System;
using System.Collections.Generic;
using System.IO;
using System.Text;

namespace Netstick.Core
{
    /// <summary>
    /// A CSV log of CONTRACT.md §3: one header line, then rows appended to a memory buffer and
    /// written in whole lines, so that a process killed at any moment leaves only whole lines. The
    /// buffer is written once its oldest row is <see cref="FlushPeriodNs"/> old (checked on every row
    /// and by <see cref="FlushIfDue"/>, which the host's loop calls), and at <see cref="Close"/>.
    /// Thread-safe. A write error is kept in <see cref="Error"/> (the run goes on) and thrown as
    /// <see cref="LogDirException"/> (exit 6) by <see cref="Close"/>.
    /// </summary>
    public class LineLog : IDisposable
    {
        /// <summary>
        /// The oldest buffered row is written after this long: half of the contract's 0.5 s, so a host
        /// that calls <see cref="FlushIfDue"/> once per frame or tick stays well within it.
        /// </summary>
        public const long FlushPeriodNs = 250000000L;

        private static readonly Encoding Utf8 = new UTF8Encoding(false);

        private readonly object rowLock = new object();
        private readonly object flushLock = new object();
        private readonly FileStream stream;
        private StringBuilder buffer = new StringBuilder(1 << 14);
        private StringBuilder spare = new StringBuilder(1 << 14);
        private long oldestPendingMonoNs = -1;
        private bool closed;
        private Exception error;

        /// <summary>Creates (truncates) path and writes the header line at once.</summary>
        protected LineLog(string path, string header)
        {
            Path = path;
            Header = header;
            try
            {
                stream = new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.Read, 1 << 16);
            }
            catch (Exception e)
            {
                if (e is IOException || e is UnauthorizedAccessException || e is NotSupportedException
                    || e is ArgumentException)
                {
                    throw new LogDirException("create log " + path + ": " + e.Message, e);
                }
                throw;
            }
            AppendLine(header);
            Flush();
            if (error != null)
            {
                closed = true;
                try
                {
                    stream.Dispose(); // retries the failed bytes, and fails again
                }
                catch (IOException)
                {
                }
                throw new LogDirException(error.Message, error);
            }
        }

        /// <summary>The file written.</summary>
        public string Path { get; private set; }

        /// <summary>The header line (without the line end).</summary>
        public string Header { get; private set; }

        /// <summary>The first write error, or null.</summary>
        public Exception Error
        {
            get { lock (rowLock) { return error; } }
        }

        /// <summary>
        /// Creates dir (and its parents) if missing and checks it is a writable directory; throws
        /// <see cref="LogDirException"/> (exit 6) naming -log-dir otherwise.
        /// </summary>
        public static void EnsureDirectory(string dir)
        {
            try
            {
                Directory.CreateDirectory(dir);
            }
            catch (Exception e)
            {
                throw new LogDirException("-log-dir " + dir + ": cannot create the directory: " + e.Message, e);
            }
        }

        /// <summary>Appends one row; line must not contain a line end.</summary>
        protected void AppendLine(string line)
        {
            bool due;
            lock (rowLock)
            {
                if (closed)
                {
                    return; // rows after Close (a late callback) are dropped, never written half
                }
                long now = Clock.MonoNs();
                if (oldestPendingMonoNs < 0)
                {
                    oldestPendingMonoNs = now;
                }
                buffer.Append(line).Append('\n');
                due = now - oldestPendingMonoNs >= FlushPeriodNs;
            }
            if (due)
            {
                Flush();
            }
        }

        /// <summary>Writes the buffer if its oldest row waited <see cref="FlushPeriodNs"/>; call it from the host's loop.</summary>
        public void FlushIfDue()
        {
            bool due;
            lock (rowLock)
            {
                due = oldestPendingMonoNs >= 0 && Clock.MonoNs() - oldestPendingMonoNs >= FlushPeriodNs;
            }
            if (due)
            {
                Flush();
            }
        }

        /// <summary>
        /// Writes every buffered row now, in one write of whole lines. The buffers are swapped under
        /// the row lock and written outside it, so a slow disk never blocks the threads logging rows.
        /// </summary>
        public void Flush()
        {
            lock (flushLock)
            {
                StringBuilder output;
                lock (rowLock)
                {
                    if (buffer.Length == 0 || stream == null)
                    {
                        return;
                    }
                    if (error != null)
                    {
                        // After a failed write the stream may hold part of a chunk: writing more could
                        // complete a torn line with the wrong bytes. The run ends with exit 6 anyway.
                        buffer.Length = 0;
                        oldestPendingMonoNs = -1;
                        return;
                    }
                    output = buffer;
                    buffer = spare;
                    oldestPendingMonoNs = -1;
                }
                Exception failed = null;
                try
                {
                    byte[] bytes = Utf8.GetBytes(output.ToString());
                    // The stream's buffer is empty after every Flush, so a chunk up to its size is one
                    // write(2) at Flush and a larger one is written directly, also as one write(2).
                    stream.Write(bytes, 0, bytes.Length);
                    stream.Flush();
                }
                catch (Exception e)
                {
                    if (!(e is IOException || e is ObjectDisposedException || e is NotSupportedException
                        || e is UnauthorizedAccessException))
                    {
                        throw;
                    }
                    failed = e;
                }
                output.Length = 0;
                lock (rowLock)
                {
                    spare = output;
                    if (failed != null && error == null)
                    {
                        error = new IOException("write log " + Path + ": " + failed.Message, failed);
                    }
                }
            }
        }

        /// <summary>Writes what is buffered and closes the file; throws <see cref="LogDirException"/> after any write error.</summary>
        public void Close()
        {
            lock (flushLock)
            {
                lock (rowLock)
                {
                    if (closed)
                    {
                        return;
                    }
                }
                Flush();
                lock (rowLock)
                {
                    closed = true;
                }
                try
                {
                    stream.Dispose();
                }
                catch (IOException e)
                {
                    lock (rowLock)
                    {
                        if (error == null)
                        {
                            error = new IOException("close log " + Path + ": " + e.Message, e);
                        }
                    }
                }
            }
            Exception err = Error;
            if (err != null)
            {
                throw new LogDirException(err.Message, err);
            }
        }

        public void Dispose()
        {
            Close();
        }

        /// <summary>Flushes each log that is due (the host's loop calls this with every log it holds).</summary>
        public static void FlushIfDue(IEnumerable<LineLog> logs)
        {
            foreach (LineLog log in logs)
            {
                if (log != null)
                {
                    log.FlushIfDue();
                }
            }
        }

        /// <summary>
        /// Makes free text safe for one CSV field without quoting and for one value of a
        /// space-separated key=value detail (commas, spaces and line ends become '_'), as the
        /// reference's logs.Sanitize.
        /// </summary>
        public static string Sanitize(string s)
        {
            if (s == null)
            {
                return "";
            }
            var chars = s.ToCharArray();
            for (int i = 0; i < chars.Length; i++)
            {
                char c = chars[i];
                if (c == ',' || c == '\n' || c == '\r' || c == ' ')
                {
                    chars[i] = '_';
                }
            }
            return new string(chars);
        }

        /// <summary>Makes text safe for one CSV field (commas and line ends become '_'); spaces stay.</summary>
        protected static string Field(string s)
        {
            if (s == null)
            {
                return "";
            }
            if (s.IndexOf(',') < 0 && s.IndexOf('\n') < 0 && s.IndexOf('\r') < 0)
            {
                return s;
            }
            return s.Replace(',', '_').Replace('\n', '_').Replace('\r', '_');
        }
    }
}
