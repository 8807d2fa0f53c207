// A Spring Boot app whose one endpoint allows each client address 3 a minute, with bursts of 3
// (CL.THROTTLE 2 3 60), and answers a 429 with Retry-After and the RateLimit headers: the app
// docs/clients.md shows, served by clients/java/examples' test.
package example;

import dev.rediscell.Cell;
import dev.rediscell.Outcome;
import dev.rediscell.spring.SpringCell;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

@SpringBootApplication
@RestController
public class LimitedApp implements WebMvcConfigurer {
  private final Cell cell;

  public LimitedApp(StringRedisTemplate redis) {
    this.cell = SpringCell.over(redis);
  }

  public static void main(String[] args) {
    SpringApplication.run(LimitedApp.class, args);
  }

  @GetMapping("/")
  public Map<String, Boolean> index() {
    return Map.of("ok", true);
  }

  @Override
  public void addInterceptors(InterceptorRegistry registry) {
    registry.addInterceptor(new PerAddress()).addPathPatterns("/");
  }

  /** 3 a minute per address: q=3 units, back in w=60 s. */
  private final class PerAddress implements HandlerInterceptor {
    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
      String key = "ratelimit:per-address:{" + request.getRemoteAddr() + "}";
      Outcome outcome;
      try {
        outcome = cell.throttle(key, 2, 3, 60);
      } catch (RuntimeException noAnswer) {
        // A server that does not answer is no denial: refused with a 503 (failing closed).
        response.setStatus(503);
        return false;
      }
      long t = outcome.allowed() ? outcome.resetAfter() : outcome.retryAfter();
      response.setHeader("RateLimit-Policy", "\"per-address\";q=3;w=60");
      response.setHeader("RateLimit", "\"per-address\";r=" + outcome.remaining() + ";t=" + t);
      if (outcome.allowed()) {
        return true;
      }
      response.setStatus(429);
      response.setHeader("Retry-After", Long.toString(outcome.retryAfter()));
      return false;
    }
  }
}
