// The token interface: POST /auth with `Authorization: Bearer <API secret>` answers {token}, a signed
// HS256 JWT whose exp is the (short, real-time) lifetime. 400 for a missing or malformed header, 401 for
// a wrong secret.
import type { FastifyInstance } from 'fastify';
import type { SandboxState } from '../state.ts';
import { sameSecret } from '../../lib/secrets.ts';
import { bearer, fail } from './common.ts';

export function authRoutes(state: SandboxState) {
  return async function (app: FastifyInstance): Promise<void> {
    // The method is "not shown": POST (service-notes' reading), and GET for a client that reads it otherwise.
    app.route({ method: ['POST', 'GET'], url: '/auth', handler: async (req, reply) => {
      const b = bearer(req);
      if (!b.ok) {
        return fail(
          reply,
          400,
          b.problem === 'missing'
            ? 'missing Authorization header: send Authorization: Bearer <API secret>'
            : 'malformed Authorization header: expected Bearer <API secret>',
        );
      }
      if (!sameSecret(b.value, state.credentials.apiSecret)) return fail(reply, 401, 'invalid authorization header: the API secret is not valid');
      return reply.send({ token: state.jwt.sign() });
    } });
  };
}
