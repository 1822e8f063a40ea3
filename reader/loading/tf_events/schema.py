"""The protocol buffer messages of TensorFlow's own dumps (our `DebugEvent` schema),
declared without TensorFlow (docs/tf_dumps.md).

TensorFlow's dumper (`tf.debugging.experimental.enable_dump_debug_info`) writes
`DebugEvent` messages (tensorflow/core/protobuf/debug_event.proto). The field numbers
and types below are those of TensorFlow's public schema (and of `TensorProto`,
`TensorShapeProto` and `GraphDebugInfo.FileLineCol`, which it uses); only the fields
this reader reads are declared: protobuf skips the others. The classes live in a
descriptor pool of their own, so a process that imports TensorFlow's generated
classes too sees no clash of names.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "tfdbg_tui.tf_events"

# Per message: (field name, number, type, label, message type or None, oneof or None).
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_MESSAGES: dict[str, list[tuple[str, int, int, int, str | None, str | None]]] = {
    "DebugEvent": [
        ("wall_time", 1, _F.TYPE_DOUBLE, _OPTIONAL, None, None),
        ("step", 2, _F.TYPE_INT64, _OPTIONAL, None, None),
        ("debug_metadata", 3, _F.TYPE_MESSAGE, _OPTIONAL, "DebugMetadata", "what"),
        ("source_file", 4, _F.TYPE_MESSAGE, _OPTIONAL, "SourceFile", "what"),
        ("stack_frame_with_id", 6, _F.TYPE_MESSAGE, _OPTIONAL, "StackFrameWithId", "what"),
        ("graph_op_creation", 7, _F.TYPE_MESSAGE, _OPTIONAL, "GraphOpCreation", "what"),
        ("debugged_graph", 8, _F.TYPE_MESSAGE, _OPTIONAL, "DebuggedGraph", "what"),
        ("execution", 9, _F.TYPE_MESSAGE, _OPTIONAL, "Execution", "what"),
        ("graph_execution_trace", 10, _F.TYPE_MESSAGE, _OPTIONAL, "GraphExecutionTrace", "what"),
        ("graph_id", 11, _F.TYPE_STRING, _OPTIONAL, None, "what"),
        ("debugged_device", 12, _F.TYPE_MESSAGE, _OPTIONAL, "DebuggedDevice", "what"),
    ],
    "DebugMetadata": [
        ("tensorflow_version", 1, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("file_version", 2, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("tfdbg_run_id", 3, _F.TYPE_STRING, _OPTIONAL, None, None),
    ],
    "SourceFile": [
        ("file_path", 1, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("host_name", 2, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("lines", 3, _F.TYPE_STRING, _REPEATED, None, None),
    ],
    # GraphDebugInfo.FileLineCol in tensorflow/core/framework/graph_debug_info.proto.
    "FileLineCol": [
        ("file_index", 1, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("line", 2, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("col", 3, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("func", 4, _F.TYPE_STRING, _OPTIONAL, None, None),
    ],
    "StackFrameWithId": [
        ("id", 1, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("file_line_col", 2, _F.TYPE_MESSAGE, _OPTIONAL, "FileLineCol", None),
    ],
    "CodeLocation": [
        ("host_name", 1, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("stack_frame_ids", 2, _F.TYPE_STRING, _REPEATED, None, None),
    ],
    "GraphOpCreation": [
        ("op_type", 1, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("op_name", 2, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("graph_name", 3, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("graph_id", 4, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("device_name", 5, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("input_names", 6, _F.TYPE_STRING, _REPEATED, None, None),
        ("num_outputs", 7, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("code_location", 8, _F.TYPE_MESSAGE, _OPTIONAL, "CodeLocation", None),
        ("output_tensor_ids", 9, _F.TYPE_INT32, _REPEATED, None, None),
    ],
    "DebuggedGraph": [
        ("graph_id", 1, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("graph_name", 2, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("outer_context_id", 6, _F.TYPE_STRING, _OPTIONAL, None, None),
    ],
    "DebuggedDevice": [
        ("device_name", 1, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("device_id", 2, _F.TYPE_INT32, _OPTIONAL, None, None),
    ],
    "Execution": [
        ("op_type", 1, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("num_outputs", 2, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("graph_id", 3, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("input_tensor_ids", 4, _F.TYPE_INT64, _REPEATED, None, None),
        ("output_tensor_ids", 5, _F.TYPE_INT64, _REPEATED, None, None),
        # TensorDebugMode, read as its number (the enum is not declared).
        ("tensor_debug_mode", 6, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("tensor_protos", 7, _F.TYPE_MESSAGE, _REPEATED, "TensorProto", None),
        ("code_location", 8, _F.TYPE_MESSAGE, _OPTIONAL, "CodeLocation", None),
        ("output_tensor_device_ids", 9, _F.TYPE_INT32, _REPEATED, None, None),
    ],
    "GraphExecutionTrace": [
        ("tfdbg_context_id", 1, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("op_name", 2, _F.TYPE_STRING, _OPTIONAL, None, None),
        ("output_slot", 3, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("tensor_debug_mode", 4, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("tensor_proto", 5, _F.TYPE_MESSAGE, _OPTIONAL, "TensorProto", None),
        ("device_name", 6, _F.TYPE_STRING, _OPTIONAL, None, None),
    ],
    # tensorflow/core/framework/tensor.proto; `dtype` (a DataType) read as its number.
    "TensorProto": [
        ("dtype", 1, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("tensor_shape", 2, _F.TYPE_MESSAGE, _OPTIONAL, "TensorShapeProto", None),
        ("tensor_content", 4, _F.TYPE_BYTES, _OPTIONAL, None, None),
        ("half_val", 13, _F.TYPE_INT32, _REPEATED, None, None),
        ("float_val", 5, _F.TYPE_FLOAT, _REPEATED, None, None),
        ("double_val", 6, _F.TYPE_DOUBLE, _REPEATED, None, None),
        ("int_val", 7, _F.TYPE_INT32, _REPEATED, None, None),
        ("string_val", 8, _F.TYPE_BYTES, _REPEATED, None, None),
        ("scomplex_val", 9, _F.TYPE_FLOAT, _REPEATED, None, None),
        ("int64_val", 10, _F.TYPE_INT64, _REPEATED, None, None),
        ("bool_val", 11, _F.TYPE_BOOL, _REPEATED, None, None),
        ("dcomplex_val", 12, _F.TYPE_DOUBLE, _REPEATED, None, None),
        ("uint32_val", 16, _F.TYPE_UINT32, _REPEATED, None, None),
        ("uint64_val", 17, _F.TYPE_UINT64, _REPEATED, None, None),
    ],
    # tensorflow/core/framework/tensor_shape.proto (Dim is declared as its own message).
    "TensorShapeProto": [
        ("dim", 2, _F.TYPE_MESSAGE, _REPEATED, "TensorShapeDim", None),
        ("unknown_rank", 3, _F.TYPE_BOOL, _OPTIONAL, None, None),
    ],
    "TensorShapeDim": [
        ("size", 1, _F.TYPE_INT64, _OPTIONAL, None, None),
        ("name", 2, _F.TYPE_STRING, _OPTIONAL, None, None),
    ],
    # Views of a whole block of the graph_execution_traces file, parsed in one call
    # (`reader.loading.tf_events.trace_block`): protobuf merges a message that occurs again
    # into the first, appending to repeated fields, so each field of every
    # record lands in one list. Field 15 takes the TFRecord framing between records,
    # rewritten as a bytes field (DebugEvent has no field 15).
    "TraceBlock": [
        ("wall_time", 1, _F.TYPE_DOUBLE, _REPEATED, None, None),
        ("graph_execution_trace", 10, _F.TYPE_MESSAGE, _OPTIONAL, "TraceColumns", None),
        ("framing", 15, _F.TYPE_BYTES, _OPTIONAL, None, None),
    ],
    # Names as bytes: no UTF-8 check per record; the few distinct ones are decoded once.
    # Singular fields (device, dtype, shape) only take each record's value in turn:
    # declared so that protobuf does not keep them as unknown fields.
    "TraceColumns": [
        ("tfdbg_context_id", 1, _F.TYPE_BYTES, _REPEATED, None, None),
        ("op_name", 2, _F.TYPE_BYTES, _REPEATED, None, None),
        # proto3 writes no zero: only the records with a slot above 0 have one.
        ("output_slot", 3, _F.TYPE_INT32, _REPEATED, None, None),
        ("tensor_debug_mode", 4, _F.TYPE_INT32, _REPEATED, None, None),
        ("tensor_proto", 5, _F.TYPE_MESSAGE, _OPTIONAL, "TensorColumns", None),
        ("device_name", 6, _F.TYPE_BYTES, _OPTIONAL, None, None),
    ],
    "TensorColumns": [
        ("dtype", 1, _F.TYPE_INT32, _OPTIONAL, None, None),
        ("tensor_shape", 2, _F.TYPE_BYTES, _OPTIONAL, None, None),
        ("tensor_content", 4, _F.TYPE_BYTES, _REPEATED, None, None),
    ],
    # The slots of a block, one message per record, when some are above 0.
    "SlotBlock": [
        ("graph_execution_trace", 10, _F.TYPE_MESSAGE, _REPEATED, "SlotOnly", None),
        ("framing", 15, _F.TYPE_BYTES, _OPTIONAL, None, None),
    ],
    "SlotOnly": [("output_slot", 3, _F.TYPE_INT32, _OPTIONAL, None, None)],
}


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="tfdbg_tui/tf_events.proto", package=_PACKAGE, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        oneofs: list[str] = []
        for field_name, number, kind, label, type_name, oneof in fields:
            field = message.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name is not None:
                field.type_name = f".{_PACKAGE}.{type_name}"
            if oneof is not None:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    message.oneof_decl.add(name=oneof)
                field.oneof_index = oneofs.index(oneof)
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file_descriptor())


def _message_class(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


DebugEvent = _message_class("DebugEvent")
CodeLocation = _message_class("CodeLocation")
TraceBlock = _message_class("TraceBlock")
SlotBlock = _message_class("SlotBlock")
