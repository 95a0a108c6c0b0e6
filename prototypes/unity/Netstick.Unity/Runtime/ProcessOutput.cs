using System;
using System.IO;
using System.Text;
using UnityEngine;

namespace Netstick.Unity
{
    /// <summary>
    /// Standard output carries only the contract's NETSTICK lines (CONTRACT.md §2: nothing before
    /// READY). Libraries print to Console too (Mirror announces "Server listening on port" on
    /// headless servers), so Console.Out is pointed at standard error and the NETSTICK lines are
    /// written to the real standard output, kept here. Unity's own log (Debug.Log, exceptions) is
    /// forwarded to standard error as well: the manifests start players with -logFile /dev/null.
    /// </summary>
    public static class ProcessOutput
    {
        private static TextWriter lines;

        public static void Route()
        {
            if (lines != null)
            {
                return;
            }
            var utf8 = new UTF8Encoding(false);
            var stdout = new StreamWriter(Console.OpenStandardOutput(), utf8) { AutoFlush = true, NewLine = "\n" };
            var stderr = new StreamWriter(Console.OpenStandardError(), utf8) { AutoFlush = true, NewLine = "\n" };
            lines = TextWriter.Synchronized(stdout);
            TextWriter errors = TextWriter.Synchronized(stderr);
            Console.SetOut(errors);
            Console.SetError(errors);
            Application.logMessageReceivedThreaded += Forward;
        }

        /// <summary>One NETSTICK line on standard output, flushed at once.</summary>
        public static void Line(string line)
        {
            Route();
            lines.WriteLine(line);
            lines.Flush();
        }

        /// <summary>A diagnostic on standard error.</summary>
        public static void Error(string message)
        {
            Route();
            Console.Error.WriteLine(message);
        }

        private static void Forward(string message, string stackTrace, LogType type)
        {
            bool trace = type == LogType.Exception || type == LogType.Error || type == LogType.Assert;
            Console.Error.WriteLine("[" + type + "] " + message + (trace && !string.IsNullOrEmpty(stackTrace) ? "\n" + stackTrace.TrimEnd() : ""));
        }
    }
}
