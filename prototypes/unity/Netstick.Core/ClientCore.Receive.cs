using System;
using System.Collections.Generic;
using System.Globalization;

namespace Netstick.Core
{
    /// <summary>
    /// The client's receive path (IClientHandler): the transport calls these during its Poll on the
    /// host's thread; welcomes, world chunks, echoes and block acknowledgements update the players.
    /// </summary>
    public sealed partial class ClientCore
    {
        // ---- IClientHandler: called during transport.Poll on the host's thread ----

        private ClientPlayer Find(int player)
        {
            long i = (long)player - options.FirstPlayer;
            return i >= 0 && i < players.Length ? players[i] : null;
        }

        public void OnConnected(int player)
        {
            ClientPlayer p = Find(player);
            if (p == null || !p.Connecting || p.TransportUp)
            {
                return;
            }
            p.TransportUp = true;
            long now = MonoClock();
            p.HelloMonoNs = now;
            SendHello(p, now);
        }

        public void OnDisconnected(int player, string reason)
        {
            ClientPlayer p = Find(player);
            if (p == null || p.Gone || phase == Phase.Done)
            {
                return;
            }
            p.Gone = true;
            string why = string.IsNullOrEmpty(reason) ? "closed" : reason;
            if (p.Connecting)
            {
                ConnectFailed(p, why);
                return;
            }
            if (!p.Connected)
            {
                return;
            }
            events.Write((int)p.Id, "disconnect", "", "reason=" + LineLog.Sanitize(why));
            if (lostError == null)
            {
                lostError = "player " + p.Id + ": connection to the server lost: " + why;
            }
        }

        public void OnMessage(int player, byte[] message, int length, Channel channel)
        {
            ClientPlayer p = Find(player);
            if (p == null)
            {
                return;
            }
            if (length <= 0)
            {
                malformed.Drop("empty message");
                return;
            }
            try
            {
                switch (message[0])
                {
                    case Wire.TProbeEcho:
                        OnEcho(p, Wire.DecodeProbe(message, length));
                        break;
                    case Wire.TWelcome:
                        OnWelcome(p, Wire.DecodeWelcome(message, length));
                        break;
                    case Wire.TWorldChunk:
                        OnWorldChunk(p, Wire.DecodeWorldChunk(message, length, chunkBuf), length);
                        break;
                    case Wire.TBlockAck:
                        OnBlockAck(p, Wire.DecodeBlockAck(message, length));
                        break;
                    case Wire.TState:
                        Wire.DecodeState(message, length, stateBuf);
                        break;
                    case Wire.TBlockChanges:
                        Wire.DecodeBlockChanges(message, length, changeBuf);
                        break;
                    case Wire.TKeepalive:
                        Wire.DecodeKeepalive(message, length);
                        break;
                    default:
                        malformed.Drop("unexpected message type " + message[0] + " from the server");
                        break;
                }
            }
            catch (WireException e)
            {
                malformed.Drop(e.Message);
            }
        }

        private void OnEcho(ClientPlayer p, Probe pr)
        {
            if (pr.Player != p.Id)
            {
                malformed.Drop("probe echo for player " + pr.Player + " on the connection of player " + p.Id);
                return;
            }
            long now = MonoClock();
            long sentUnixNs, lateNs;
            if (!p.Books[pr.Kind].Answer(pr.Seq, pr.SentMonoNs, out sentUnixNs, out lateNs))
            {
                return; // a duplicate, or too old to be in the ring
            }
            rtt.Write(sentUnixNs, (int)p.Id, pr.Seq, (now - pr.SentMonoNs) / 1e3, KindNames[pr.Kind],
                lateNs >= 0 ? lateNs / 1e3 : (double?)null);
            // Only the echo of the probe the player waits for sends the next one: an echo that comes after
            // its probe was given up is logged but starts no second chain.
            if (pr.Kind == Wire.ProbeNet && p.PingpongWaiting && pr.Seq == p.PingpongSeq)
            {
                p.PingpongWaiting = false;
                SendPingpong(p);
            }
        }

        private void OnWelcome(ClientPlayer p, Welcome w)
        {
            if (w.Player != p.Id)
            {
                if (p.Connecting)
                {
                    ConnectFailed(p, "welcome: welcome for player " + w.Player);
                }
                else
                {
                    malformed.Drop("welcome for player " + w.Player + " on the connection of player " + p.Id);
                }
                return;
            }
            if (!p.Connecting)
            {
                return; // an answer to a repeated hello
            }
            long now = MonoClock();
            p.Connecting = false;
            p.Connected = true;
            handshakes--;
            connectedCount++;
            p.NextHelloMonoNs = long.MaxValue;
            p.Pos = w.Spawn;
            p.WorldChunks = w.WorldChunks;
            p.WorldBlocks = w.WorldBlocks;
            events.Write((int)p.Id, "connect", Ms(now - p.ConnectStartMonoNs), "");
            events.Write((int)p.Id, "spawn", "", "x=" + G(w.Spawn.X) + " y=" + G(w.Spawn.Y) + " z=" + G(w.Spawn.Z));
            if (w.WorldChunks == 0 || p.WorldGot >= w.WorldChunks)
            {
                WorldDone(p, now);
            }
        }

        private void OnWorldChunk(ClientPlayer p, WorldChunk m, int length)
        {
            if (p.WorldSeen == null)
            {
                p.WorldSeen = new HashSet<uint>();
            }
            // A repeated welcome resends the chunks: count each once.
            if (p.WorldSeen.Add(m.Seq))
            {
                p.WorldGot++;
                p.WorldBytes += length;
            }
            if (p.Connected && p.WorldGot >= p.WorldChunks)
            {
                WorldDone(p, MonoClock());
            }
        }

        private void WorldDone(ClientPlayer p, long now)
        {
            if (p.WorldLoaded)
            {
                return;
            }
            p.WorldLoaded = true;
            events.Write((int)p.Id, "world_loaded", Ms(now - p.HelloMonoNs),
                "objects=" + p.WorldBlocks.ToString(CultureInfo.InvariantCulture) + " bytes="
                + p.WorldBytes.ToString(CultureInfo.InvariantCulture));
        }

        private void OnBlockAck(ClientPlayer p, BlockAck a)
        {
            long sent;
            if (!p.Actions.TryGetValue(a.Action, out sent))
            {
                return;
            }
            p.Actions.Remove(a.Action);
            events.Write((int)p.Id, "block_ack", ((MonoClock() - sent) / 1e3).ToString("F3", CultureInfo.InvariantCulture),
                "action=" + a.Action.ToString(CultureInfo.InvariantCulture) + " ok=" + (a.Ok ? "true" : "false"));
        }

        private static string Ms(long ns)
        {
            return (ns / 1e6).ToString("F3", CultureInfo.InvariantCulture);
        }

        private static string G(float v)
        {
            return v.ToString("R", CultureInfo.InvariantCulture);
        }
    }
}
