using System.Collections.Generic;
using System.Globalization;
using Netstick.Core;

namespace Netstick.Unity
{
    /// <summary>
    /// The frame and send rates of one process, from -target-frame-rate and -send-rate (both default
    /// to -tick-rate), recorded in meta.json beside the tick rate so that a result states them.
    /// </summary>
    public sealed class RateSettings
    {
        public const string TargetFrameRateFlag = "target-frame-rate";
        public const string SendRateFlag = "send-rate";

        /// <summary>Simulation tick rate (-tick-rate), Hz.</summary>
        public double TickRateHz { get; private set; }

        /// <summary>The library's send (network update) rate, Hz.</summary>
        public double SendRateHz { get; private set; }

        /// <summary>Application.targetFrameRate, frames per second.</summary>
        public int TargetFrameRate { get; private set; }

        /// <summary>QualitySettings.vSyncCount: always 0 so that targetFrameRate holds.</summary>
        public int VSyncCount { get { return 0; } }

        public static RateSettings From(Options options)
        {
            var rates = new RateSettings();
            rates.TickRateHz = options.TickRateHz;
            rates.SendRateHz = Positive(options, SendRateFlag, options.TickRateHz);
            double frames = Positive(options, TargetFrameRateFlag, options.TickRateHz);
            // targetFrameRate is whole frames per second; never round a rate down to 0.
            rates.TargetFrameRate = frames < 1 ? 1 : (int)System.Math.Round(frames);
            return rates;
        }

        /// <summary>The keys meta.json gets beside the contract's.</summary>
        public IDictionary<string, object> MetaKeys()
        {
            return new Dictionary<string, object>
            {
                { "target_frame_rate", TargetFrameRate },
                { "vsync_count", VSyncCount },
                { "send_rate_hz", SendRateHz },
                { "tick_rate_hz", TickRateHz },
            };
        }

        private static double Positive(Options options, string flag, double fallback)
        {
            string text;
            if (options.Extra == null || !options.Extra.TryGetValue(flag, out text) || string.IsNullOrEmpty(text))
            {
                return fallback;
            }
            double value;
            if (!double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out value)
                || !(value > 0) || double.IsInfinity(value))
            {
                throw new UsageException("-" + flag + " \"" + text + "\": expected a rate in Hz > 0");
            }
            return value;
        }
    }
}
