using System;
using System.Collections.Generic;
using Netstick.Core;
using Unity.Collections;
using Unity.Entities;
using Unity.NetCode;
using Unity.Networking.Transport;
using Channel = Netstick.Core.Channel;
// Netstick.Core has a World too (the voxel world).
using World = Unity.Entities.World;

namespace Netstick.Unity.Nfe
{
    /// <summary>
    /// What server and client share: world creation with the tick rates, the driver, sending a
    /// Wire message as NetstickRpc pieces and reading received pieces back into whole messages.
    /// </summary>
    public static class NfeWorlds
    {
        public static World CreateServer(RateSettings rates)
        {
            World world = ClientServerBootstrap.CreateServerWorld("Netstick server");
            var tickRate = new ClientServerTickRate();
            tickRate.ResolveDefaults();
            tickRate.SimulationTickRate = Math.Max(1, (int)Math.Round(rates.TickRateHz));
            // NFE's snapshot (send) rate; RPCs go out at the end of every simulation tick.
            tickRate.NetworkTickRate = Math.Max(1, (int)Math.Round(rates.SendRateHz));
            tickRate.MaxSimulationStepsPerFrame = 1;
            // BusyWait leaves Application.targetFrameRate to the host (-target-frame-rate);
            // Sleep (the server-build default) would set it to the simulation rate.
            tickRate.TargetFrameRateMode = ClientServerTickRate.FrameRateMode.BusyWait;
            // One singleton: NFE creates it itself when a global NetCodeConfig asset exists.
            using (EntityQuery query = world.EntityManager.CreateEntityQuery(ComponentType.ReadWrite<ClientServerTickRate>()))
            {
                if (query.IsEmptyIgnoreFilter)
                {
                    world.EntityManager.CreateEntity(typeof(ClientServerTickRate));
                }
                query.SetSingleton(tickRate);
            }
            return world;
        }

        public static World CreateClient(int player)
        {
            return ClientServerBootstrap.CreateClientWorld("Netstick player " + player);
        }

        // The world's NetworkStreamDriver singleton is used inside the query's lifetime only.

        public static bool Listen(World world, NetworkEndpoint endpoint)
        {
            using (EntityQuery query = DriverQuery(world))
            {
                return query.GetSingletonRW<NetworkStreamDriver>().ValueRW.Listen(endpoint);
            }
        }

        public static Entity Connect(World world, NetworkEndpoint server)
        {
            using (EntityQuery query = DriverQuery(world))
            {
                return query.GetSingletonRW<NetworkStreamDriver>().ValueRW.Connect(world.EntityManager, server);
            }
        }

        public static string RemoteAddress(World world, NetworkStreamConnection connection)
        {
            using (EntityQuery query = DriverQuery(world))
            {
                return query.GetSingletonRW<NetworkStreamDriver>().ValueRW.GetRemoteEndPoint(connection).Address;
            }
        }

        private static EntityQuery DriverQuery(World world)
        {
            return world.EntityManager.CreateEntityQuery(ComponentType.ReadWrite<NetworkStreamDriver>());
        }

        public static IDictionary<string, string> Channels()
        {
            var channels = new Dictionary<string, string>();
            channels["reliable"] = "reliable";
            channels["unreliable"] = "reliable (NFE's RPCs are always reliable; its unreliable traffic is ghost snapshots and commands)";
            return channels;
        }

        /// <summary>Queues one Wire message to a connection as NetstickRpc pieces (sent by the world's next tick).</summary>
        public static void Send(EntityManager em, EntityArchetype archetype, Entity connection, ref uint seq, byte[] message, int length, Channel channel)
        {
            int offset = 0;
            do
            {
                int piece = Math.Min(NetstickRpc.MaxPieceBytes, length - offset);
                var rpc = new NetstickRpc { Seq = seq++, Flags = 0 };
                if (offset + piece >= length)
                {
                    rpc.Flags |= NetstickRpc.FinalPiece;
                }
                if (channel == Channel.Unreliable)
                {
                    rpc.Flags |= NetstickRpc.UnreliableChannel;
                }
                for (int i = 0; i < piece; i++)
                {
                    rpc.Data.Add(message[offset + i]);
                }
                Entity e = em.CreateEntity(archetype);
                em.SetComponentData(e, rpc);
                em.SetComponentData(e, new SendRpcCommandRequest { TargetConnection = connection });
                offset += piece;
            }
            while (offset < length);
        }

        public static EntityArchetype SendArchetype(EntityManager em)
        {
            return em.CreateArchetype(typeof(NetstickRpc), typeof(SendRpcCommandRequest));
        }

        public static EntityQuery ReceivedQuery(EntityManager em)
        {
            return em.CreateEntityQuery(ComponentType.ReadOnly<NetstickRpc>(), ComponentType.ReadOnly<ReceiveRpcCommandRequest>());
        }
    }

    /// <summary>Reassembles the pieces received from each connection, in sequence order.</summary>
    public sealed class NfeReassembly
    {
        private struct Piece
        {
            public Entity Source;
            public NetstickRpc Rpc;
        }

        private readonly Dictionary<Entity, List<byte>> pending = new Dictionary<Entity, List<byte>>();
        private readonly List<Piece> pieces = new List<Piece>();
        private byte[] whole = new byte[4096];

        /// <summary>Reads and destroys every received piece; calls deliver(source connection, bytes, length, channel) per whole message.</summary>
        public void Drain(EntityManager em, EntityQuery received, Action<Entity, byte[], int, Channel> deliver)
        {
            if (received.IsEmptyIgnoreFilter)
            {
                return;
            }
            pieces.Clear();
            using (NativeArray<NetstickRpc> rpcs = received.ToComponentDataArray<NetstickRpc>(Allocator.Temp))
            using (NativeArray<ReceiveRpcCommandRequest> sources = received.ToComponentDataArray<ReceiveRpcCommandRequest>(Allocator.Temp))
            {
                for (int i = 0; i < rpcs.Length; i++)
                {
                    pieces.Add(new Piece { Source = sources[i].SourceConnection, Rpc = rpcs[i] });
                }
            }
            em.DestroyEntity(received);
            pieces.Sort((a, b) => a.Source == b.Source ? a.Rpc.Seq.CompareTo(b.Rpc.Seq) : a.Source.Index.CompareTo(b.Source.Index));
            foreach (Piece p in pieces)
            {
                List<byte> buffer;
                if (!pending.TryGetValue(p.Source, out buffer))
                {
                    buffer = new List<byte>();
                    pending[p.Source] = buffer;
                }
                for (int i = 0; i < p.Rpc.Data.Length; i++)
                {
                    buffer.Add(p.Rpc.Data[i]);
                }
                if ((p.Rpc.Flags & NetstickRpc.FinalPiece) != 0)
                {
                    int length = buffer.Count;
                    if (whole.Length < length)
                    {
                        whole = new byte[Math.Max(length, whole.Length * 2)];
                    }
                    buffer.CopyTo(whole);
                    buffer.Clear();
                    Channel channel = (p.Rpc.Flags & NetstickRpc.UnreliableChannel) != 0 ? Channel.Unreliable : Channel.Reliable;
                    deliver(p.Source, whole, length, channel);
                }
            }
        }

        public void Forget(Entity connection)
        {
            pending.Remove(connection);
        }
    }
}
