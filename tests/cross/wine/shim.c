/* bcryptprimitives.dll for Wine 8, which lacks it: Rust's std imports `ProcessPrng` from it
 * (as Windows 10 and later have it). This one fills the buffer from `RtlGenRandom`
 * (`SystemFunction036` in advapi32), in chunks it accepts. Test use only: put beside the
 * Windows binary under Wine. Build: see tests/cross/wine_smoke.py. */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk; length -= chunk;
    }
    return TRUE;
}
