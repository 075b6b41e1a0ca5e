{
  "targets": [
    {
      "target_name": "metal_cap_shim",
      "conditions": [
        ["OS=='mac'", {
          "sources": [
            "src-native/addon/addon.mm",
            "src-native/addon/addon_doctor.mm",
            "src-native/engine/capabilities.mm",
            "src-native/addon/consumers.mm",
            "src-native/doctor/doctor.mm",
            "src-native/doctor/doctor_gpu.mm",
            "src-native/doctor/doctor_heap.mm",
            "src-native/doctor/doctor_nocopy.mm",
            "src-native/doctor/doctor_probes.mm",
            "src-native/platform/host_darwin.mm",
            "src-native/platform/terminal.mm",
            "src-native/engine/swizzle.mm",
            "src-native/engine/profile.mm",
            "src-native/engine/patch.mm"
          ],
          "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
          "defines": ["NAPI_VERSION=8"],
          # -Werror=exit-time-destructors (both targets; OTHER_CFLAGS reach .mm files too): exit() runs static
          # destructors while other threads may still query a hooked device, and libc++'s std::mutex on macOS has a
          # real destructor, so every global the engine touches must be [[clang::no_destroy]] or trivially destructible.
          "xcode_settings": {
            "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
            "CLANG_CXX_LIBRARY": "libc++",
            "MACOSX_DEPLOYMENT_TARGET": "11.0",
            "CLANG_ENABLE_OBJC_ARC": "NO",
            "GCC_SYMBOLS_PRIVATE_EXTERN": "YES",
            "OTHER_CFLAGS": ["-arch", "arm64", "-arch", "x86_64", "-fobjc-exceptions", "-Werror=exit-time-destructors"],
            "OTHER_LDFLAGS": ["-arch", "arm64", "-arch", "x86_64", "-framework", "Metal", "-framework", "Foundation", "-lobjc"]
          }
        }]
      ]
    },
    {
      # The exec injector: arm64 and x86_64, as the addon. No arm64e slice: third-party programs cannot run as arm64e,
      # and a slice built outside Xcode's toolchain has no pointer authentication and would crash in an arm64e
      # process; exec refuses an arm64e-only program instead (lib/exec/codesign.ts).
      "target_name": "metal_cap_shim_inject",
      "conditions": [
        ["OS=='mac'", {
          "type": "shared_library",
          "product_prefix": "lib",
          "sources": [
            "src-native/inject/inject.mm",
            "src-native/engine/swizzle.mm",
            "src-native/engine/profile.mm",
            "src-native/engine/patch.mm"
          ],
          "xcode_settings": {
            "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
            "CLANG_CXX_LIBRARY": "libc++",
            "MACOSX_DEPLOYMENT_TARGET": "11.0",
            "CLANG_ENABLE_OBJC_ARC": "NO",
            "GCC_SYMBOLS_PRIVATE_EXTERN": "YES",
            "OTHER_CFLAGS": ["-arch", "arm64", "-arch", "x86_64", "-fobjc-exceptions", "-Werror=exit-time-destructors"],
            "OTHER_LDFLAGS": ["-arch", "arm64", "-arch", "x86_64", "-framework", "Metal", "-framework", "Foundation", "-lobjc"]
          }
        }, {
          "type": "none"
        }]
      ]
    }
  ]
}
