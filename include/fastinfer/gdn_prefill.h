#pragma once
// GDN prefill API: see issue 5; filled by the prefill work.
