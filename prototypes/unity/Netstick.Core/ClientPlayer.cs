using System.Collections.Generic;

namespace Netstick.Core
{
    /// <summary>One emulated player of a client process: its connection state, position and probe books.</summary>
    internal sealed class ClientPlayer
    {
        public readonly uint Id;
        public readonly int Index;

        /// <summary>The player's own generator, seeded (seed, id) as the Go reference seeds it.</summary>
        public readonly Rng Rng;

        public readonly ProbeBook[] Books = { new ProbeBook(), new ProbeBook() }; // by Wire.ProbeNet / ProbeApp

        // connection
        public bool Connecting;
        public bool TransportUp;
        public bool Connected; // the welcome arrived
        public bool Gone; // its connection ended
        public long ConnectStartMonoNs;
        public long HelloMonoNs;
        public long NextHelloMonoNs = long.MaxValue;

        // world snapshot
        public uint WorldChunks;
        public uint WorldBlocks;
        public int WorldGot;
        public long WorldBytes;
        public bool WorldLoaded;
        public HashSet<uint> WorldSeen;

        // game state
        public Vec3 Pos;
        public float Yaw;
        public uint InputSeq;
        public uint NextAction;
        public readonly Dictionary<uint, long> Actions = new Dictionary<uint, long>(); // action id -> mono send time
        public uint LibSeq;
        public bool SendFailed;

        // pingpong: probes still to send, and the one awaiting its echo
        public int PingpongLeft;
        public uint PingpongSeq;
        public long PingpongSentMonoNs;
        public bool PingpongWaiting;
        public Channel PingpongChannel;
        public int PingpongSize;

        public ClientPlayer(uint id, int index, ulong seed)
        {
            Id = id;
            Index = index;
            Rng = new Rng(seed, id);
        }
    }
}
