"""tools/profile_ops.py builds the code predictor's 15 heads as the runner does (native/predictor_heads.cpp): each from
its own slice of the stacked weights, compressed ones kept compressed (not unpacked into float constants)."""
from __future__ import annotations

import shutil

import numpy as np
import openvino as ov
import profile_ops
import pytest

from wyoming_chorus.export.builtin import resolve_model


@pytest.mark.parametrize("mode", ["f32", "int8"])
def test_each_profiled_head_holds_its_own_slice_of_the_stacked_weights(mode, tmp_path):
    directory = tmp_path / "tiny"
    shutil.copytree(resolve_model("builtin:tiny"), directory)
    if mode != "f32":
        pytest.importorskip("nncf", reason="weight compression needs the optional extra: pip install '.[compress]'")
        from wyoming_chorus.export.compress import compress_model_dir

        compress_model_dir(directory, mode, group_size=16)  # a group that fits the tiny model's widths
    core = ov.Core()
    xml = directory / "code_predictor.xml"
    gather = core.read_model(xml).output("logits").get_node().input_value(0).get_node().input_value(1).get_node()
    head_index = gather.input_value(1).get_node()
    gathered = core.compile_model(ov.Model([gather.output(0)], [head_index]), "CPU",
                                  {"INFERENCE_PRECISION_HINT": "f32"}).create_infer_request()
    width = gather.get_output_partial_shape(0)[1].get_length()
    heads = profile_ops.predictor_heads(core, xml, width, {"INFERENCE_PRECISION_HINT": "f32"})
    assert len(heads) == gather.get_input_partial_shape(0)[0].get_length()
    identity = ov.Tensor(np.eye(width, dtype=np.float32))  # rows of the identity: the logits are the weights
    for j, (request, infer) in enumerate(heads):
        request.set_input_tensor(identity)
        infer()
        weights = gathered.infer({0: np.array(j, np.int64)})[0]
        np.testing.assert_allclose(request.get_output_tensor().data.T, weights, atol=1e-6, err_msg=f"head {j}")
        products = [op.get_rt_info()["runtimePrecision"].astype(str)
                    for op in request.get_compiled_model().get_runtime_model().get_ops()
                    if op.get_rt_info()["layerType"].astype(str).startswith("FullyConnected")]
        assert products == ["u8" if mode == "int8" else "f32"], products  # as the runner's heads report them
