// Provided by the kit. The CUDA samples' helper_timer.h name for the sdkTimer API.
#pragma once
#include "lab/sdk_timer.h"
