// Provided by the kit. The CUDA samples' helper_functions.h, as far as the lectures
// use it: the sdkTimer API.
#pragma once
#include "lab/sdk_timer.h"
