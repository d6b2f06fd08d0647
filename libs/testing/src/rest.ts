type Json = Record<string, unknown>;

/** A REST answer: its status and its JSON body (empty when it had none). */
export interface RestAnswer {
  status: number;
  body: Json;
}

/**
 * A gateway's REST API as one client calls it: `token` as its bearer on every request (or the
 * one a call names), the body sent and read as JSON.
 */
export function restClient(url: string, token: string) {
  return async (
    method: string,
    path: string,
    body?: unknown,
    auth = token,
  ): Promise<RestAnswer> => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Json };
  };
}
