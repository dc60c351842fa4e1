# Pinned SPIR-V toolchain for MotifCL's checked-in shaders (spirv/*.spv).
#
# This is the ONE place that says which compiler and which flags produce the
# bytes in spirv/. cmake/spirv.cmake (regen and check) and the manifest
# (spirv/manifest.json) both take their values from here. Changing anything in
# this file means: run `cmake --build <build> --target spirv-regen` and commit
# the regenerated spirv/ together with this file.

# Version as printed by `glslangValidator --version`, first line, after
# "Glslang Version: " (Debian 12 package glslang-tools 12.0.0-2).
set(SPIRV_PIN_GLSLANG_VERSION "11:12.0.0")

# Code-generation flags, in order. These are recorded in the manifest.
#   -V                       SPIR-V for Vulkan semantics.
#   --target-env vulkan1.2   Vulkan 1.2 rules, emits SPIR-V 1.5.
#   -g0                      strip all debug instructions (OpName, OpSource,
#                            OpSourceExtension, OpLine, ...): no source or
#                            include names and no paths can end up in the
#                            binary, and the bytes do not change with
#                            comments, identifiers or the directory compiled from.
# No -Os on purpose: glslang then runs the SPIRV-Tools optimizer that is
# linked into that glslang binary, whose version the glslang version above
# does not identify (distributions and the Vulkan SDK link different
# SPIRV-Tools commits), so the same pinned glslang could give different bytes.
# Drivers optimize SPIR-V themselves anyway.
set(SPIRV_PIN_GLSLANG_FLAGS -V --target-env vulkan1.2 -g0)

# Flags for spirv-val, run on every module by regen and check.
set(SPIRV_PIN_VAL_FLAGS --target-env vulkan1.2)
