using Unity.Burst;
using Unity.Burst.Intrinsics;
using Unity.Collections;
using Unity.Entities;
using Unity.NetCode;
using Unity.Networking.Transport;

namespace Netstick.Unity.Nfe
{
    /// <summary>
    /// One piece of a Netstick.Core Wire message as a Netcode for Entities RPC, serialized by hand
    /// (the RPC source generator has no variable-length byte field). NFE sends RPCs on its
    /// reliable pipeline without fragmentation, so a message travels in pieces of at most
    /// <see cref="MaxPieceBytes"/>; pieces of one sender arrive in order and carry a sequence
    /// number, because request entities are not read back in arrival order.
    /// </summary>
    [BurstCompile]
    public struct NetstickRpc : IComponentData, IRpcCommandSerializer<NetstickRpc>
    {
        public const int MaxPieceBytes = 1000;
        public const byte FinalPiece = 1;
        public const byte UnreliableChannel = 2;

        public uint Seq;
        public byte Flags;
        public FixedList1024Bytes<byte> Data;

        public void Serialize(ref DataStreamWriter writer, in RpcSerializerState state, in NetstickRpc data)
        {
            writer.WriteUInt(data.Seq);
            writer.WriteByte(data.Flags);
            writer.WriteUShort((ushort)data.Data.Length);
            for (int i = 0; i < data.Data.Length; i++)
            {
                writer.WriteByte(data.Data[i]);
            }
        }

        public void Deserialize(ref DataStreamReader reader, in RpcDeserializerState state, ref NetstickRpc data)
        {
            data.Seq = reader.ReadUInt();
            data.Flags = reader.ReadByte();
            int length = reader.ReadUShort();
            data.Data.Clear();
            for (int i = 0; i < length && i < MaxPieceBytes; i++)
            {
                data.Data.Add(reader.ReadByte());
            }
        }

        public PortableFunctionPointer<RpcExecutor.ExecuteDelegate> CompileExecute()
        {
            return InvokeExecuteFunctionPointer;
        }

        [BurstCompile(DisableDirectCall = true)]
        [AOT.MonoPInvokeCallback(typeof(RpcExecutor.ExecuteDelegate))]
        private static void InvokeExecute(ref RpcExecutor.Parameters parameters)
        {
            // A request entity (NetstickRpc + ReceiveRpcCommandRequest) that the host reads.
            RpcExecutor.ExecuteCreateRequestComponent<NetstickRpc, NetstickRpc>(ref parameters);
        }

        private static readonly PortableFunctionPointer<RpcExecutor.ExecuteDelegate> InvokeExecuteFunctionPointer =
            new PortableFunctionPointer<RpcExecutor.ExecuteDelegate>(InvokeExecute);
    }

    /// <summary>Sends the NetstickRpc request entities the host creates (NFE's pattern for hand-serialized RPCs).</summary>
    [UpdateInGroup(typeof(RpcCommandRequestSystemGroup))]
    [CreateAfter(typeof(RpcSystem))]
    [BurstCompile]
    internal partial struct NetstickRpcRequestSystem : ISystem
    {
        private RpcCommandRequest<NetstickRpc, NetstickRpc> request;

        [BurstCompile]
        private struct SendRpc : IJobChunk
        {
            public RpcCommandRequest<NetstickRpc, NetstickRpc>.SendRpcData Data;

            public void Execute(in ArchetypeChunk chunk, int unfilteredChunkIndex, bool useEnabledMask, in v128 chunkEnabledMask)
            {
                Data.Execute(chunk, unfilteredChunkIndex);
            }
        }

        public void OnCreate(ref SystemState state)
        {
            request.OnCreate(ref state);
        }

        [BurstCompile]
        public void OnUpdate(ref SystemState state)
        {
            var job = new SendRpc { Data = request.InitJobData(ref state) };
            state.Dependency = job.Schedule(request.Query, state.Dependency);
        }
    }
}
