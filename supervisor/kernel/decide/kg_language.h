/*  kg_language: which language the inner kernel runs, and which interpreter
    runs kguard's Python helpers for it (the version probe, kguard.probe;
    the device probe, kguard.devprobe).

    Pure: no process, no socket, no clock. Decided, first that known, by
    1. the kernel's own word: language_info.name of its kernel_info_reply
       (cached by the supervisor across restarts);
    2. the kernelspec's `language` (`kguard kernel --language`);
    3. a guess from the inner argv's program name (`python*`), for a kernel
       started before it answered kernel_info with no kernelspec language.
    Not argv[0] first: a Python kernel is often started through a wrapper
    (`conda run`, a venv launcher script, `uv run`), and a program named
    python may run a kernel for another language.
*/
#ifndef KG_LANGUAGE_H
#define KG_LANGUAGE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/*  The kernel's language, lower case as the kernel or kernelspec spells it
    ("python", "r", "julia", ...), or "unknown". info is a kernel_info_reply
    content or NULL; spec_language the kernelspec's or NULL; argv the inner
    kernel's (NULL-terminated) or NULL. The result is borrowed from info,
    spec_language, or a static string. */
const char *kg_language_of(const cJSON *info, const char *spec_language, char *const *argv);

/*  True if language (kg_language_of) is Python. */
bool kg_language_is_python(const char *language);

/*  The program that runs `-m kguard.probe` for a kernel of that language:
    argv[0] when its name starts with "python" (the kernel's own
    interpreter), else "python3" from the kernel's PATH for a Python kernel
    started through a wrapper, else NULL (no Python helper for this
    kernel). Borrowed from argv or static. */
const char *kg_language_interpreter(const char *language, char *const *argv);

#endif
