"""Everything in dlpt that depends on torch.compile's private internals (Dynamo, AOTAutograd,
Inductor), in one place: after a torch upgrade, this package is what to re-check.

Checked against torch 2.11 (+cu130, on the GPU machine: ``tests/gpu/test_compiled.py``),
torch 2.13 (CPU build: ``tests/native/``, ``tests/unit/``) and torch 2.14.1 (the +cu130 wheel on
a CPU machine, CI's newest-torch leg: the same tests).

Private APIs and conventions used, by module:

- :mod:`.dynamo` (compile events):
  ``torch._dynamo.callback.callback_handler`` (``register_start_callback``,
  ``register_end_callback``, ``remove_start_callback``, ``remove_end_callback``) and
  ``torch._dynamo.utils.get_compilation_metrics()``.
- :mod:`.events`: the fields of Dynamo's ``CompilationMetrics`` records (``compile_id``,
  ``frame_key``, ``start_time``, ``co_name``, ``co_filename``, ``co_firstlineno``,
  ``entire_frame_compile_time_s``, ``backend_compile_time_s``, ``inductor_compile_time_s``,
  ``graph_op_count``, ``restart_reasons``, ``recompile_reason``, ``fail_type``,
  ``fail_reason``), read with ``getattr`` so a missing field reads as empty.
- :mod:`dlpt.model.resume_names` (a naming convention, read by reports too): Dynamo's
  resume-function names, ``torch_dynamo_resume_in_<fn>_at_<line>``.
- :mod:`.inductor_lines` (generated lines -> model lines):
  ``torch._inductor.codecache.PyCodeCache`` (``linemaps``, ``stack_frames_for_code``) and the
  comments of Inductor's generated wrapper (``# AOT ID: ['...']``, ``Original ATen: [...]``,
  ``<kernel> = async_compile.<kind>(`` definitions, ``<kernel>.run(`` launches).
- :mod:`.provenance` (kernel -> FX stack traces, installed at the first compilation a profile
  sees): ``torch._inductor.config.trace.provenance_tracking_level`` (set to 2, "basic", while a
  profile runs, when the program left it 0), ``torch._inductor.output_code.CompiledFxGraph``
  (``__init__`` and ``after_deserialization`` wrapped to copy ``inductor_provenance_stack_traces_str``
  under ``cache_key``), and the key/stem convention of wrapper files (``<key[1:3]>/<key>.py``).
- :mod:`.wrapper_lines` (which source gives a wrapper line its model frames): the generated
  wrapper's ``# [Provenance debug handles] <kernel>:<handle>`` comments above launches, the
  ``out=bufN`` / ``bufN = ...`` spelling of what a line writes, and that module-level code of a
  wrapper runs only when Inductor loads it.
- :mod:`.inductor_partitions` (a patch, installed at the first compilation a profile sees):
  ``torch._inductor.codegen.wrapper.PythonWrapperCodegen.define_subgraph_launcher_fn``
  (replaced only while its source still contains the splice it re-implements),
  ``torch._inductor.utils.IndentedBuffer`` (its private ``_lines``), ``LineContext`` and
  the ``value``/``line_map`` of ``ValueWithLineMap``.

- :mod:`.step_frames` (``--step-on`` on compiled functions):
  ``torch._dynamo.eval_frame.skip_code`` (a per-code ``FrameExecStrategy``: the step wrapper's
  frames run outside Dynamo when Dynamo is handed one, the frames they call are compiled).
  Relied on: ``torch.compile(module)`` and ``module.compile()`` hand Dynamo the first frame below
  ``Module.__call__`` (``OptimizedModule._initialize``), and frame strategies do not apply to calls
  Dynamo inlines while tracing.

Outside this package, only naming conventions: :mod:`dlpt.model.source_files` treats Inductor's cache
directory (``torchinductor_<user>``), AOTAutograd's ``<file>:codegen(...)`` and FX's
``<eval_with_key>`` file names as library code.

Nothing here may break the profiled program, and nothing fails silently either: every exception
caught here is logged at debug on the ``dlpt`` logger (``DLPT_LOG=debug``) and counted by reason
(:mod:`.failures`); a profile stores the counts in ``meta.capture.compile_failures``, the
generated lines left without a model line in ``meta.capture.inductor_unmapped_frames`` and
``inductor_unmapped_kernels``, and the report header says when either is non-zero.

After a torch upgrade: run ``tests/unit/test_inductor_*.py``, ``tests/native/test_compile*.py``
(CPU) and ``tests/gpu/test_compiled.py`` and ``tests/gpu/test_compiled_launches.py`` (GPU
machine), profile ``examples/compiled_gpt.py`` with ``DLPT_LOG=debug`` in both modes (it logs
where each generated line's model line came from, and the lines left without one), and update
the version line above.
"""
